package broker

import (
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// registerTimeout is registerBrokerTimeoutMills.
const registerTimeout = 6 * time.Second

// registerLoop re-registers every RegisterNameServerPeriod, and soon after
// registerAsync asks for it. Kicks coalesce: however many topics are created
// while a registration runs, one more registration follows, and it carries
// only the topics changed since the last one (registerIncrement).
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
			b.registerIncrement()
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

// registerBody builds the REGISTER_BROKER body of the topics in w. A broker
// without read or write permission advertises its own permission on every
// topic (BrokerController.registerBrokerAll and registerIncrementBrokerData).
func (b *Broker) registerBody(rc *runtimeConfig, w remoting.TopicConfigSerializeWrapper) []byte {
	if bp := rc.BrokerPermission; bp&topicgroup.PermRead == 0 || bp&topicgroup.PermWrite == 0 {
		for name, tc := range w.TopicConfigTable {
			w.TopicConfigTable[name] = &topicgroup.TopicConfig{
				TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
				Perm: bp, TopicFilterType: filterTypeSingleTag,
			}
		}
	}
	return remoting.MarshalBody(&remoting.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: w})
}

// registerHeader is the REGISTER_BROKER header of rc's advertised address.
// The HA address is brokerIP2 and the HA port the broker listens on
// (haServerAddr: listenPort+1 at start as 4.9.8's haListenPort), which a
// runtime listenPort does not move.
//
// In acting-master mode it carries enableActingMaster and the broker's
// own expiry (brokerNotActiveTimeoutMillis), as a 5.3.3 broker; otherwise
// neither, as 4.9.8 (a name server then never takes the broker for a prime
// slave).
func (b *Broker) registerHeader(rc *runtimeConfig, body []byte) map[string]string {
	h := &remoting.RegisterBrokerRequestHeader{
		BrokerName:   b.opts.BrokerName,
		BrokerAddr:   rc.addr(),
		ClusterName:  b.opts.BrokerClusterName,
		HAServerAddr: b.haServerAddr(rc),
		BrokerID:     b.brokerID(),
		BodyCrc32:    int64(crc32.ChecksumIEEE(body) & 0x7FFFFFFF),
	}
	if b.opts.EnableSlaveActingMaster {
		on := true
		h.EnableActingMaster = &on
		h.HeartbeatTimeoutMillis = b.opts.BrokerNotActiveTimeoutMillis
	}
	return h.Fields()
}

// registerAll registers every topic with every name server in parallel and
// waits for all of them. With checkOrder, the ORDER_TOPIC_CONFIG table of the
// first name server that accepted it (the reply's body, when present) sets
// which topics are orderly.
func (b *Broker) registerAll(checkOrder bool) {
	addrs := b.opts.NamesrvAddrs()
	if len(addrs) == 0 || b.ctl != nil && b.ctl.fenced.Load() {
		// Controller mode without a role yet: stock skips registration
		// while the broker is isolated.
		return
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	res := b.registerFull(addrs)
	b.registeredAll.Store(allAccepted(res))
	i := slices.IndexFunc(res, func(r registerResult) bool { return r.err == nil })
	if !checkOrder || i < 0 || len(res[i].resp.Body) == 0 {
		return
	}
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(res[i].resp.Body, &kv); err != nil {
		b.log.Warn().Err(err).Msg("register broker: bad order topic table")
		return
	}
	if kv.Table != nil {
		b.topics.setOrderTopics(kv.Table)
	}
}

// registerIncrement registers the topics created or changed since the last
// increment, with the current data version, as Java's
// registerIncrementBrokerData does after a topic is created: a name server
// merges them into the broker's routes (RouteInfoManager.registerBroker
// updates the topics in the body and keeps the others), so creating 2 000
// topics does not send the whole table 2 000 times.
//
// A name server holds the rest of the table only if it accepted a full
// registration over the same connection (it drops a broker's routes when
// the connection closes, and then takes the next registration as its first).
// So a name server without such a registration gets a full one instead, and
// one whose increment failed or went over another connection gets a full
// one right after. Topics that some name server did not accept even so are
// sent again with the next increment (and with the periodic registration).
func (b *Broker) registerIncrement() {
	addrs := b.opts.NamesrvAddrs()
	if len(addrs) == 0 || b.ctl != nil && b.ctl.fenced.Load() {
		return
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	w, names, ok := b.topics.takeUnregistered()
	if !ok {
		return
	}
	var inc, full []string
	for _, addr := range addrs {
		if b.regConns[addr] != 0 {
			inc = append(inc, addr)
		} else {
			full = append(full, addr)
		}
	}
	for _, r := range b.sendRegister(w, inc) {
		// A failed increment is retried at once as a full registration: a
		// name server that restarted fails the request on the old
		// connection, and the retry dials a new one.
		if r.err != nil || r.conn != b.regConns[r.addr] {
			full = append(full, r.addr)
		}
	}
	accepted := true
	if len(full) > 0 {
		// A name server skips the topics of a registration whose data
		// version it already holds, and one that just took the increment
		// (as its first registration over a new connection, or without its
		// answer reaching us) holds this one: the full registration gets the
		// next version.
		b.topics.nextVersion()
		accepted = allAccepted(b.registerFull(full))
	}
	b.registeredAll.Store(accepted)
	if !accepted {
		b.topics.giveBackUnregistered(names)
	}
}

// registerFull sends every topic to addrs and records, for each that
// accepted, the connection it came over. b.regMu must be held.
func (b *Broker) registerFull(addrs []string) []registerResult {
	res := b.sendRegister(b.topics.Snapshot(), addrs)
	for _, r := range res {
		if r.err != nil {
			delete(b.regConns, r.addr)
		} else {
			b.regConns[r.addr] = r.conn
		}
	}
	return res
}

// registerResult is one name server's answer to a REGISTER_BROKER: err is
// set unless it accepted; conn is the connection's serial
// (remoting.Client.InvokeConn).
type registerResult struct {
	addr string
	resp *remoting.Command
	conn uint64
	err  error
}

func allAccepted(res []registerResult) bool {
	for _, r := range res {
		if r.err != nil {
			return false
		}
	}
	return true
}

// sendRegister sends the REGISTER_BROKER of w's topics to addrs in parallel
// and waits for every answer; the results are in addrs' order.
func (b *Broker) sendRegister(w remoting.TopicConfigSerializeWrapper, addrs []string) []registerResult {
	if len(addrs) == 0 {
		return nil
	}
	rc := b.runtime()
	body := b.registerBody(rc, w)
	header := b.registerHeader(rc, body)
	res := make([]registerResult, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := remoting.NewRequest(remoting.RegisterBroker, maps.Clone(header), body)
			ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
			resp, conn, err := b.nsCli.InvokeConn(ctx, addr, req)
			cancel()
			if err == nil && resp.Code != remoting.Success {
				err = fmt.Errorf("broker: register with %s refused: code %d, %s", addr, resp.Code, resp.Remark)
			}
			if err != nil {
				b.log.Warn().Err(err).Str("namesrv", addr).Msg("register broker failed")
			} else {
				b.log.Debug().Str("namesrv", addr).Int("topics", len(w.TopicConfigTable)).Msg("registered with name server")
			}
			res[i] = registerResult{addr: addr, resp: resp, conn: conn, err: err}
		}()
	}
	wg.Wait()
	b.noteRegistered(res)
	return res
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
			req := remoting.NewRequest(remoting.UnregisterBroker, (&remoting.BrokerIdentityRequestHeader{
				BrokerName: b.opts.BrokerName, BrokerAddr: brokerAddr, ClusterName: b.opts.BrokerClusterName, BrokerID: b.brokerID(),
			}).Fields(), nil)
			ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
			defer cancel()
			if _, err := b.nsCli.Invoke(ctx, addr, req); err != nil {
				b.log.Warn().Err(err).Str("namesrv", addr).Msg("unregister broker failed")
			}
		}()
	}
	wg.Wait()
}
