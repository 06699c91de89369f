package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Broker roles (brokerRole; 4.9.8 BrokerRole). A master has brokerId 0 and
// takes writes; a SLAVE has brokerId > 0, follows the master of its
// brokerName and, as 4.9.8:
//
//   - refuses every put: the store answers ErrSlave, which a send maps to
//     SERVICE_NOT_AVAILABLE with the stock remark (DefaultMessageStore.
//     checkStoreStatus), a consumer send-back to SYSTEM_ERROR
//     "SERVICE_NOT_AVAILABLE"; END_TRANSACTION is refused with
//     SLAVE_NOT_AVAILABLE (EndTransactionProcessor). 5.3.3 refuses sends
//     earlier, with SYSTEM_BUSY "[REJECTREQUEST]..." (rejectRequest).
//   - serves pulls (pull_processor.go: suggestBroker), never storing the commit
//     offset a pull carries; UPDATE_CONSUMER_OFFSET is stored as on a master
//     (ConsumerManageProcessor has no role check: the Java client commits to
//     the slave while the master is down), until the next SlaveSynchronize
//     round overwrites the keys the master has.
//   - runs no delay-level delivery, timer dequeue, transaction check or POP
//     revive (lifecycle.go Start); their state is loaded and kept, so that
//     the same store started as a master resumes them. In acting-master
//     mode they are started held and run while the slave acts as master
//     (acting_master.go setSpecialServices).
//   - learns its master from every registration (noteRegistered) and copies
//     the master's topics, consumer offsets, delay offsets and subscription
//     groups every 10 s (slaveSyncLoop, as 4.9.8 SlaveSynchronize).
//
// 5.3.3's classic SlaveSynchronize adds the POP message request modes
// (GET_ALL_MESSAGE_REQUEST_MODE 402), which rmq copies too (a 4.x master
// answers REQUEST_CODE_NOT_SUPPORTED: nothing to copy).
//
// With timerWheelEnable, the 5.x timer state is copied too, as 5.3.3:
// the timer metrics (GET_TIMER_METRICS 61) in syncAll, when their data
// version differs, and the timer checkpoint (GET_TIMER_CHECK_POINT 60)
// every 3 s (syncTimerCheckpoint, timer.go); a 4.x master answers
// REQUEST_CODE_NOT_SUPPORTED to both (no timers: nothing to copy). The
// copied checkpoint is what the slave answers to 60, and once the slave
// holds the master's commitlog up to where the master stood when it was
// read, a slave that takes over (started as master, or acting master) does
// not deliver again the timers the master had read and delivered
// (timer/master.go); what the master delivered after the last copy is
// delivered again (duplicates, never a loss or an early delivery).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// SlaveSynchronize's cadence (4.9.8 BrokerController.handleSlaveSynchronize:
// first after 3 s, then every 10 s) and BrokerOuterAPI's 3 s call timeout.
const (
	slaveSyncFirst   = 3 * time.Second
	slaveSyncPeriod  = 10 * time.Second
	slaveSyncTimeout = 3 * time.Second
)

// haMasterMinLen is the shortest haMasterAddress that pins the master
// (BrokerController.initialize: length() >= 6).
const haMasterMinLen = 6

// IsSlave reports whether the broker is a SLAVE.
func (b *Broker) IsSlave() bool { return b.opts.isSlave() }

// haPinned reports whether haMasterAddress fixes the master's HA address,
// which registrations then leave alone.
func (b *Broker) haPinned() bool {
	return b.opts.isSlave() && len(b.opts.HaMasterAddress) >= haMasterMinLen
}

// MasterAddr is the master's listen address the last registration answered
// (masterAddr of RegisterBrokerResponseHeader), where SlaveSynchronize
// copies from; "" when the name server knows no live master.
func (b *Broker) MasterAddr() string {
	if p := b.masterAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// HAMasterAddr is the master's HA address the broker follows: haMasterAddress
// when it pins it, else the haServerAddr of the last registration answer
// that had one.
func (b *Broker) HAMasterAddr() string {
	if p := b.haMasterAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// setHAMasterAddr records the master's HA address and hands it to the HA
// client (DefaultMessageStore.updateHaMasterAddress).
func (b *Broker) setHAMasterAddr(addr string) {
	if old := b.HAMasterAddr(); old != addr {
		b.log.Info().Str("from", old).Str("to", addr).Msg("master HA address changed")
	}
	b.haMasterAddr.Store(&addr)
	b.SetHAMasterAddress(addr)
}

// initRole applies the role at New: a slave's store refuses puts, and a
// pinned master address is recorded (startRole hands it to the HA client).
func (b *Broker) initRole() {
	b.am.initMaxOffset = b.store.MaxPhyOffset()
	if !b.opts.isSlave() {
		return
	}
	b.store.SetSlave(true)
	if b.haPinned() {
		b.haMasterAddr.Store(&b.opts.HaMasterAddress)
	}
}

// startRole starts a SLAVE's duties at Start, after startHA: its HA client
// follows the pinned master address, if any, at once, and SlaveSynchronize
// runs.
func (b *Broker) startRole() {
	if !b.opts.isSlave() {
		return
	}
	if a := b.HAMasterAddr(); a != "" {
		b.SetHAMasterAddress(a)
	}
	b.bg.Add(1)
	go b.slaveSyncLoop()
	if b.timers != nil {
		b.bg.Add(1)
		go b.every(timerCheckpointSyncPeriod, b.syncTimerCheckpoint)
	}
}

// noteRegistered takes what a registration answered, as
// BrokerController.doRegisterBrokerAll does with the first result: the
// master's HA address (unless pinned, and only when the answer has one) and
// the master's address for SlaveSynchronize (always, "" included: a master
// that is gone stops the copying). A name server answers them to a broker
// of id ≠ 0 whose brokerName has a live master (RouteInfoManager).
func (b *Broker) noteRegistered(res []registerResult) {
	for _, r := range res {
		if r.err != nil || r.resp == nil {
			continue
		}
		h, err := remoting.DecodeHeader[remoting.RegisterBrokerResponseHeader](r.resp)
		if err != nil {
			b.log.Warn().Err(err).Str("namesrv", r.addr).Msg("register broker: bad response header")
			continue
		}
		if !b.opts.isSlave() {
			return
		}
		if !b.haPinned() && h.HAServerAddr != "" && h.HAServerAddr != b.HAMasterAddr() {
			b.setHAMasterAddr(h.HAServerAddr)
		}
		if old := b.MasterAddr(); old != h.MasterAddr {
			b.log.Info().Str("from", old).Str("to", h.MasterAddr).Msg("master address changed")
			b.masterAddr.Store(&h.MasterAddr)
		}
		return
	}
}

// slaveSyncLoop runs SlaveSynchronize.syncAll on a SLAVE: first after
// slaveSyncFirst, then every slaveSyncPeriod of the broker clock.
func (b *Broker) slaveSyncLoop() {
	defer b.bg.Done()
	t := b.clock.NewTimer(slaveSyncFirst)
	for {
		select {
		case <-b.stop:
			t.Stop()
			return
		case <-t.C():
			b.syncAll()
			t = b.clock.NewTimer(slaveSyncPeriod)
		}
	}
}

// syncAll copies the master's topics, consumer offsets, delay offsets,
// subscription groups, POP request modes and timer metrics, each on its own (one failing does not stop the
// others), as SlaveSynchronize.syncAll. Nothing is copied while no master is
// known, or from this broker's own address.
func (b *Broker) syncAll() {
	master := b.MasterAddr()
	if master == "" || master == b.runtime().addr() {
		return
	}
	for _, s := range []struct {
		code  int32
		what  string
		apply func([]byte) error
	}{
		{remoting.GetAllTopicConfig, "topic config", b.syncTopicConfig},
		{remoting.GetAllConsumerOffset, "consumer offsets", b.syncConsumerOffsets},
		{remoting.GetAllDelayOffset, "delay offsets", b.syncDelayOffsets},
		{remoting.GetAllSubscriptionGroupConfig, "subscription groups", b.syncSubscriptionGroups},
		// 5.3.3 adds the POP request modes; a 4.x master does not know the
		// code, which then means it has none.
		{remoting.GetAllMessageRequestMode, "message request modes", b.pop.Modes().ReplaceFromMaster},
		{remoting.GetTimerMetrics, "timer metrics", b.syncTimerMetrics}, // with timerWheelEnable
	} {
		if s.code == remoting.GetTimerMetrics && b.timers == nil {
			continue
		}
		body, code, err := b.callMaster(master, s.code)
		if code == remoting.RequestCodeNotSupported && (s.code == remoting.GetAllMessageRequestMode || s.code == remoting.GetTimerMetrics) {
			continue
		}
		if err == nil {
			err = s.apply(body)
		}
		if err != nil {
			b.refusals.Warn(&b.log, "slave_sync_failed", remoting.SystemError).Err(err).Str("master", master).
				Str("what", s.what).Msg("slave synchronize failed")
		}
	}
}

// callMaster sends one bodiless request to the master's listen port and
// returns the body of its SUCCESS answer (BrokerOuterAPI.getAll*), or the
// code of another answer with an error.
func (b *Broker) callMaster(master string, code int32) ([]byte, int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slaveSyncTimeout)
	defer cancel()
	resp, err := b.nsCli.Invoke(ctx, master, remoting.NewRequest(code, nil, nil))
	if err != nil {
		return nil, remoting.SystemError, err
	}
	if resp.Code != remoting.Success {
		return nil, resp.Code, fmt.Errorf("master %s answered request code %d with code %d: %s", master, code, resp.Code, resp.Remark)
	}
	return resp.Body, resp.Code, nil
}

// syncTopicConfig replaces the topic table with the master's when the
// master's dataVersion differs (syncTopicConfig).
func (b *Broker) syncTopicConfig(body []byte) error {
	var w remoting.TopicConfigSerializeWrapper
	if err := fastjson.Unmarshal(body, &w); err != nil {
		return err
	}
	if b.topics.replaceFromMaster(w) {
		b.log.Info().Int("topics", len(w.TopicConfigTable)).Msg("topic config copied from the master")
	}
	return nil
}

// syncConsumerOffsets puts the master's offsets over this broker's and
// writes them (syncConsumerOffset).
func (b *Broker) syncConsumerOffsets(body []byte) error {
	if _, err := b.clients.Offsets.PutAllFromMaster(body); err != nil {
		return err
	}
	return b.clients.Offsets.Persist()
}

// syncDelayOffsets makes the master's delay offsets the schedule service's
// (syncDelayOffset writes delayOffset.json).
func (b *Broker) syncDelayOffsets(body []byte) error {
	return b.sched.ReplaceOffsets(body)
}

// syncSubscriptionGroups replaces the group table with the master's when
// the master's dataVersion differs (syncSubscriptionGroupConfig).
func (b *Broker) syncSubscriptionGroups(body []byte) error {
	replaced, err := b.clients.SubGroups.ReplaceFromMaster(body)
	if replaced {
		b.log.Info().Msg("subscription groups copied from the master")
	}
	return err
}

// replaceFromMaster replaces the table and its version with the master's
// when the versions differ, and writes topics.json; it reports whether it
// did. As stock, the name servers are not told: a slave's topics never
// make routes.
func (m *TopicConfigManager) replaceFromMaster(w remoting.TopicConfigSerializeWrapper) bool {
	table := make(map[string]*topicgroup.TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		if tc == nil {
			continue
		}
		cp := *tc
		if cp.TopicName == "" {
			cp.TopicName = name
		}
		if cp.TopicFilterType == "" {
			cp.TopicFilterType = filterTypeSingleTag
		}
		table[name] = &cp
	}
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return false
	}
	m.table, m.version = table, w.DataVersion
	m.changes++
	seq := m.changes
	m.mu.Unlock()
	m.persist(seq)
	return true
}
