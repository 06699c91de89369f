package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/broker/replicas"
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
//   - serves pulls (pull.go: suggestBroker), never storing the commit
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
func (b *Broker) IsSlave() bool { return b.isSlave() }

// haPinned reports whether haMasterAddress fixes the master's HA address,
// which registrations then leave alone.
func (b *Broker) haPinned() bool {
	return b.ctl == nil && b.opts.isSlave() && len(b.opts.HaMasterAddress) >= haMasterMinLen
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
		if !b.isSlave() {
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
	if master == "" || master == b.runtime().addr() || !b.isSlave() {
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

// Controller mode (enableControllerMode, 5.3.3 RIP-44): the broker set's
// controller, not brokerRole, says who is master. broker/replicas runs the
// protocol (ReplicasManager); the broker keeps the role it was given there:
// brokerId 0 and SYNC_MASTER as master, the controller's id and SLAVE
// otherwise, and fenced (a slave's store, no name-server registration)
// until the first role is known. The AutoSwitch HA service replicates in
// place of the classic one.
type controllerMode struct {
	rm     atomic.Pointer[replicas.Manager] // set by Start; requests may come first
	ha     replicas.Service
	master atomic.Bool
	id     atomic.Int64 // brokerConfig.brokerId now: the configured one until the controller says
	fenced atomic.Bool
}

// isSlave, isSyncMaster and brokerID are the role now: the configured one,
// or in controller mode the one the controller gave.
func (b *Broker) isSlave() bool {
	if b.ctl != nil {
		return !b.ctl.master.Load()
	}
	return b.opts.isSlave()
}

func (b *Broker) isSyncMaster() bool {
	if b.ctl != nil {
		return b.ctl.master.Load()
	}
	return b.opts.isSyncMaster()
}

// BrokerID is the broker's id now: brokerId, or in controller mode the
// id the controller gave it (0 while master; the configured one is -1).
func (b *Broker) BrokerID() int64 { return b.brokerID() }

func (b *Broker) brokerID() int64 {
	if b.ctl != nil {
		return b.ctl.id.Load()
	}
	return b.opts.BrokerID
}

// ReplicasRole is the controller-mode role state, and false when the
// broker is not in controller mode.
func (b *Broker) ReplicasRole() (replicas.Role, bool) {
	if b.ctl == nil || b.ctl.rm.Load() == nil {
		return replicas.Role{}, false
	}
	return b.ctl.rm.Load().Role(), true
}

// newControllerMode builds the HA service of controller mode (New, after
// the store opened): Options.ControllerHA when set, else the AutoSwitch
// service.
func (b *Broker) newControllerMode() error {
	if !b.opts.EnableControllerMode {
		return nil
	}
	mk := b.opts.ControllerHA
	if mk == nil {
		mk = newAutoSwitchHA
	}
	b.ctl = &controllerMode{}
	ctl := b.ctl
	svc, err := mk(b.store, &b.opts, func(proposed []int64) {
		// The manager exists from Start on; a proposal before it is
		// made again by the service's next check.
		if rm := ctl.rm.Load(); rm != nil {
			rm.OnSyncStateSetChange(proposed)
		}
	})
	if err != nil {
		b.ctl = nil
		return fmt.Errorf("broker: controller mode: %w", err)
	}
	ctl.ha = svc
	b.ctl.id.Store(b.opts.BrokerID)
	b.ctl.fenced.Store(true)
	b.store.SetSlave(true)
	return nil
}

// startControllerMode is Start's role part in controller mode: the
// master-only delivery services start held (as on an acting-master
// slave), SlaveSynchronize runs while a master is known, and the replicas
// manager starts finding the controller (after the HA service listens).
func (b *Broker) startControllerMode() {
	b.tx.SetActive(false) // the POP service starts held on the fenced (slave) store
	b.startSpecialServicesHeld()
	b.bg.Add(1)
	go b.slaveSyncLoop()
	o := &b.opts
	cfg := replicas.Config{
		ClusterName: o.BrokerClusterName, BrokerName: o.BrokerName, BrokerAddr: b.runtime().addr(),
		IdentityPath: o.IdentityPath(o.StorePathRootDir), FS: o.FS,
		HeartbeatInterval: time.Duration(o.BrokerHeartbeatInterval) * time.Millisecond,
		Clock:             b.clock, Logger: componentLog(o.Logger, "replicas"),
	}
	o.ConfigFrom(&cfg)
	rm := replicas.New(cfg, b.nsCli, b.ctl.ha, (*ctlBroker)(b))
	b.ctl.rm.Store(rm)
	rm.Start()
}

// ctlBroker is the Broker as the replicas manager drives it.
type ctlBroker Broker

func (c *ctlBroker) MaxPhyOffset() int64 { return c.store.MaxPhyOffset() }
func (c *ctlBroker) BrokerID() int64     { return (*Broker)(c).brokerID() }

// BecomeMaster runs after the HA service opened the epoch: only now does
// the store take writes.
func (c *ctlBroker) BecomeMaster(epoch int32) {
	b := (*Broker)(c)
	b.ctl.id.Store(namesrvMasterID)
	none := ""
	b.masterAddr.Store(&none)
	b.ctl.master.Store(true)
	if !b.ctl.fenced.Load() {
		b.store.SetSlave(false)
	}
	b.setSpecialServices(true)
	b.log.Info().Int32("epoch", epoch).Msg("controller mode: now master (SYNC_MASTER, brokerId 0)")
}

// BecomeSlave runs before the HA service follows the new master: the
// store refuses writes first.
func (c *ctlBroker) BecomeSlave(id int64, masterAddr string, epoch int32) {
	b := (*Broker)(c)
	b.ctl.master.Store(false)
	b.store.SetSlave(true)
	b.setSpecialServices(false)
	b.ctl.id.Store(id)
	b.masterAddr.Store(&masterAddr)
	b.log.Info().Int32("epoch", epoch).Int64("brokerId", id).Str("master", masterAddr).Msg("controller mode: now slave")
}

func (c *ctlBroker) SetFenced(f bool) {
	b := (*Broker)(c)
	b.ctl.fenced.Store(f)
	b.store.SetSlave(f || !b.ctl.master.Load())
}

// RegisterNameServers registers the new role with every name server, off
// the manager's goroutine (the manager is closed before Shutdown waits for
// the background loops). A slave learns its master's HA address from the
// answer, which names the master only once the master registered its own
// new role: until an answer names the master the controller named, a
// slave registers again every second (stock waits for its next periodic
// registration, 10 s or more, with no HA connection meanwhile).
func (c *ctlBroker) RegisterNameServers() {
	b := (*Broker)(c)
	if len(b.opts.NamesrvAddrs()) == 0 {
		return
	}
	want := b.MasterAddr()
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		for range slaveLearnTries {
			b.registerAll(false)
			if !b.isSlave() || b.MasterAddr() == want && b.HAMasterAddr() != "" {
				return
			}
			t := b.clock.NewTimer(time.Second)
			select {
			case <-b.stop:
				t.Stop()
				return
			case <-t.C():
			}
		}
	}()
}

// slaveLearnTries bounds those registrations; the periodic one goes on.
const slaveLearnTries = 30

// inSyncRefusal refuses, on a controller-mode master, a send that waits
// for replication (WAIT not false) while the sync state set is smaller
// than minInSyncReplicas (CommitLog.asyncPutMessage: IN_SYNC_REPLICAS_NOT_
// ENOUGH, answered SYSTEM_ERROR "in-sync replicas not enough"); nil
// otherwise. As stock, a oneway send is refused too (and not stored).
func (b *Broker) inSyncRefusal(wait bool) *remoting.Refusal {
	if b.ctl == nil || !wait || !b.ctl.master.Load() {
		return nil
	}
	if set, _ := b.ctl.ha.SyncStateSet(); len(set) < b.opts.MinInSyncReplicas {
		return remoting.Refuse(remoting.SystemError, "in-sync replicas not enough")
	}
	return nil
}

// processNotifyBrokerRoleChanged serves NOTIFY_BROKER_ROLE_CHANGED (1008):
// SUCCESS without a replicas manager, as stock.
func (b *Broker) processNotifyBrokerRoleChanged(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.ctl == nil || b.ctl.rm.Load() == nil {
		return remoting.NewResponse(req, remoting.Success, "")
	}
	return b.ctl.rm.Load().ServeNotifyRoleChanged(req)
}

// processGetBrokerEpochCache serves GET_BROKER_EPOCH_CACHE (1007).
func (b *Broker) processGetBrokerEpochCache(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.ctl == nil || b.ctl.rm.Load() == nil {
		return remoting.NewResponse(req, remoting.SystemError, "this request only for controllerMode ")
	}
	return b.ctl.rm.Load().ServeEpochCache(req)
}
