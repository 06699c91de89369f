package grpcapi

import (
	"sync"
	"time"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/message"
)

// renewDelays is RenewStrategyPolicy: the invisible time of the n-th
// renewal of an auto-renewed message (1m 3m 5m 10m 30m 1h, then 1h).
var renewDelays = []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

// maxRenewRetryTimes is ProxyConfig maxRenewRetryTimes.
const maxRenewRetryTimes = 3

// renewal is one auto-renewed message (MessageReceiptHandle).
type renewal struct {
	group, topic string
	consumeAt    int64 // ms, when it was received
	reconsume    int32

	mu         sync.Mutex // held while the handle changes
	cur        receipt
	renewTimes int
	retryTimes int
	gone       bool // acked, changed or dropped: renew no more
}

type renewKey struct{ client, group string }

// renewTable holds the messages received with auto_renew, per client and
// group, by message id and the handle the client got
// (DefaultReceiptHandleManager, ReceiptHandleGroup).
type renewTable struct {
	mu     sync.Mutex
	groups map[renewKey]map[string]*renewal
}

func newRenewTable() *renewTable { return &renewTable{groups: make(map[renewKey]map[string]*renewal)} }

func entryKey(msgID, handle string) string { return msgID + "\x00" + handle }

func (t *renewTable) add(client, group, topic string, msgs []received, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := renewKey{client, group}
	m := t.groups[k]
	if m == nil {
		m = make(map[string]*renewal)
		t.groups[k] = m
	}
	for _, r := range msgs {
		id := r.p.Ext.Properties[message.PropUniqKey]
		m[entryKey(id, r.handle.String())] = &renewal{group: group, topic: topic, consumeAt: now.UnixMilli(), reconsume: reconsumeTimes(r.p), cur: r.handle}
	}
}

// remove takes the message out of the table and returns its current handle
// (removeReceiptHandle).
func (t *renewTable) remove(client, group, msgID, handle string) (receipt, bool) {
	t.mu.Lock()
	k := renewKey{client, group}
	e := t.groups[k][entryKey(msgID, handle)]
	if e != nil {
		delete(t.groups[k], entryKey(msgID, handle))
		if len(t.groups[k]) == 0 {
			delete(t.groups, k)
		}
	}
	t.mu.Unlock()
	if e == nil {
		return receipt{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gone = true
	return e.cur, true
}

// snapshot lists the entries by client.
func (t *renewTable) snapshot() map[renewKey][]*renewal {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[renewKey][]*renewal, len(t.groups))
	for k, m := range t.groups {
		for _, e := range m {
			out[k] = append(out[k], e)
		}
	}
	return out
}

// drop forgets e (renewal over).
func (t *renewTable) drop(k renewKey, e *renewal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, x := range t.groups[k] {
		if x == e {
			delete(t.groups[k], key)
		}
	}
	if len(t.groups[k]) == 0 {
		delete(t.groups, k)
	}
}

// renewLoop runs scheduleRenewTask every RenewPeriodMillis on the broker's
// clock until the server stops, then hands every message back.
func (s *Server) renewLoop() {
	clk := s.b.Options().Clock
	period := time.Duration(s.opts.RenewPeriodMillis) * time.Millisecond
	for {
		timer := clk.NewTimer(period)
		select {
		case <-s.done:
			timer.Stop()
			s.clearRenewals(func(renewKey) bool { return true })
			return
		case <-timer.C():
			s.renewDue()
		}
	}
}

// renewDue renews the messages whose invisible time ends within
// RenewAheadMillis; a client that is gone gets its messages back after
// InvisibleMillisWhenClear (clearGroup).
func (s *Server) renewDue() {
	s.clearRenewals(func(k renewKey) bool { return s.clients.get(k.client) == nil })
	now, msgNow := s.now().UnixMilli(), s.msgNow().UnixMilli()
	for k, entries := range s.renewals.snapshot() {
		for _, e := range entries {
			if e.cur.h.PopTime+e.cur.h.InvisibleTime-msgNow > s.opts.RenewAheadMillis {
				continue
			}
			if !s.renewOne(e, now) {
				s.renewals.drop(k, e)
			}
		}
	}
}

// renewOne is startRenewMessage: within RenewMaxMillis of its receipt the
// message is made invisible for the next renewal delay; past it renewal
// stops (STOP_RENEW) and the message is handed back after the delay the
// group's retry policy gives its reconsume times, or left as it is when the
// group has no config (DefaultReceiptHandleManager.startRenewMessage).
// false: renew no more.
func (s *Server) renewOne(e *renewal, now int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return false
	}
	if now-e.consumeAt >= s.opts.RenewMaxMillis {
		e.gone = true
		cfg := s.b.Clients().SubGroups.Find(e.group)
		if cfg == nil {
			s.log.Warn().Str("group", e.group).Str("topic", e.topic).Msg("grpc: renewal stopped, the group has no config")
			return false
		}
		back, ok := groupRetryPolicy(cfg).nextDelay(e.reconsume)
		if !ok {
			s.log.Warn().Str("group", e.group).Str("topic", e.topic).Msg("grpc: renewal stopped, the group's retry policy lists no delay")
			return false
		}
		nh, err := s.b.Pop().ChangeInvisible(e.group, e.topic, e.cur.h, back.Milliseconds())
		if err != nil {
			s.log.Warn().Err(err).Str("group", e.group).Str("topic", e.topic).Msg("grpc: hand-back of a message renewed for renewMaxTimeMillis failed")
			return false
		}
		e.cur.h = nh
		return false
	}
	d := renewDelays[min(e.renewTimes, len(renewDelays)-1)]
	nh, err := s.b.Pop().ChangeInvisible(e.group, e.topic, e.cur.h, d.Milliseconds())
	switch {
	case err == nil:
		e.cur.h = nh
		e.renewTimes++
		e.retryTimes = 0
		return true
	case err == pop.ErrNotInFlight: // renewExceptionNeedRetry: an invalid handle is not retried
		e.gone = true
		return false
	default:
		e.retryTimes++
		if e.retryTimes >= maxRenewRetryTimes {
			s.log.Warn().Err(err).Str("group", e.group).Str("topic", e.topic).Msg("grpc: renewal of a message's invisible time given up")
			e.gone = true
			return false
		}
		return true
	}
}

// clearRenewals hands back the messages of the clients gone.
func (s *Server) clearRenewals(gone func(renewKey) bool) {
	for k, entries := range s.renewals.snapshot() {
		if !gone(k) {
			continue
		}
		for _, e := range entries {
			e.mu.Lock()
			if !e.gone {
				_, _ = s.b.Pop().ChangeInvisible(e.group, e.topic, e.cur.h, s.opts.InvisibleMillisWhenClear)
				e.gone = true
			}
			e.mu.Unlock()
			s.renewals.drop(k, e)
		}
	}
}
