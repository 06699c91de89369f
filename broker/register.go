package broker

import (
	"context"
	"hash/crc32"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// registerTimeout is registerBrokerTimeoutMills.
const registerTimeout = 6 * time.Second

// registerLoop re-registers every RegisterNameServerPeriod, and soon after
// registerAsync asks for it. Kicks coalesce: however many topics are created
// while a registration runs, one more registration follows.
//
// The period runs on b.clock at a fixed rate: deadlines are start+k*period,
// and a deadline missed while a registration ran is skipped, not queued (as
// a time.Ticker drops ticks).
func (b *Broker) registerLoop() {
	defer b.bg.Done()
	period := time.Duration(b.opts.RegisterNameServerPeriod) * time.Millisecond
	next := b.clock.Now().Add(period)
	t := b.clock.NewTimer(period)
	defer func() { t.Stop() }()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C():
			// Re-arm before registering: whoever sees this registration's
			// effects (the order table) may rely on the next one being due.
			now := b.clock.Now()
			for !next.After(now) {
				next = next.Add(period)
			}
			t = clock.TimerAt(b.clock, next) // not NewTimer(next.Sub(now)): the clock may move between
			b.registerAll(true)
		case <-b.regKick:
			b.registerAll(false)
		}
	}
}

// registerAsync asks for a registration with every name server soon (after
// a topic was created or changed). It never blocks.
func (b *Broker) registerAsync() {
	select {
	case b.regKick <- struct{}{}:
	default:
	}
}

// registerBody builds the REGISTER_BROKER body. A broker without read or
// write permission advertises its own permission on every topic
// (BrokerController.registerBrokerAll).
func (b *Broker) registerBody(rc *runtimeConfig) []byte {
	w := b.topics.Snapshot()
	if bp := rc.BrokerPermission; bp&remoting.PermRead == 0 || bp&remoting.PermWrite == 0 {
		for name, tc := range w.TopicConfigTable {
			w.TopicConfigTable[name] = &remoting.TopicConfig{
				TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
				Perm: bp, TopicFilterType: filterTypeSingleTag,
			}
		}
	}
	return remoting.MarshalBody(&remoting.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: w})
}

// registerHeader is the REGISTER_BROKER header of rc's advertised address.
// The HA port is the one the broker would listen on (Java's haListenPort,
// listenPort+1 at start), which a runtime listenPort does not move.
func (b *Broker) registerHeader(rc *runtimeConfig, body []byte) map[string]string {
	return map[string]string{
		"brokerName":   b.opts.BrokerName,
		"brokerAddr":   rc.addr(),
		"clusterName":  b.opts.BrokerClusterName,
		"haServerAddr": joinHostPort(rc.BrokerIP2, b.opts.ListenPort+1),
		"brokerId":     strconv.FormatInt(b.opts.BrokerID, 10),
		"compressed":   "false",
		"bodyCrc32":    strconv.FormatInt(int64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10),
	}
}

// registerAll registers with every name server in parallel and waits for
// all of them. With checkOrder, the first reply's ORDER_TOPIC_CONFIG table
// (the body, when present) sets which topics are orderly.
func (b *Broker) registerAll(checkOrder bool) {
	addrs := b.opts.NamesrvAddrs()
	if len(addrs) == 0 {
		return
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	rc := b.runtime()
	body := b.registerBody(rc)
	header := b.registerHeader(rc, body)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		replies []*remoting.Command
	)
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := remoting.NewRequest(remoting.RegisterBroker, maps.Clone(header), body)
			resp, err := b.nsCli.InvokeTimeout(addr, req, registerTimeout)
			switch {
			case err != nil:
				b.log.Warn().Err(err).Str("namesrv", addr).Msg("register broker failed")
			case resp.Code != remoting.Success:
				b.log.Warn().Int32("code", resp.Code).Str("remark", resp.Remark).Str("namesrv", addr).Msg("register broker refused")
			default:
				b.log.Debug().Str("namesrv", addr).Msg("registered with name server")
				mu.Lock()
				replies = append(replies, resp)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.registeredAll.Store(len(replies) == len(addrs))
	if !checkOrder || len(replies) == 0 || len(replies[0].Body) == 0 {
		return
	}
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(replies[0].Body, &kv); err != nil {
		b.log.Warn().Err(err).Msg("register broker: bad order topic table")
		return
	}
	if kv.Table != nil {
		b.topics.setOrderTopics(kv.Table)
	}
}

// unregisterAll sends UNREGISTER_BROKER for the advertised address to every
// name server.
func (b *Broker) unregisterAll() {
	brokerAddr := b.runtime().addr()
	var wg sync.WaitGroup
	for _, addr := range b.opts.NamesrvAddrs() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
				"brokerName":  b.opts.BrokerName,
				"brokerAddr":  brokerAddr,
				"clusterName": b.opts.BrokerClusterName,
				"brokerId":    strconv.FormatInt(b.opts.BrokerID, 10),
			}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
			defer cancel()
			if _, err := b.nsCli.Invoke(ctx, addr, req); err != nil {
				b.log.Warn().Err(err).Str("namesrv", addr).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}
