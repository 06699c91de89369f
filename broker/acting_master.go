package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/timer"
	"github.com/rmqio/rmq/topicgroup"
)

// Slave-acting-master (5.3.3, RIP-32; docs/cn/SlaveActingMasterMode.md):
// a group without a controller whose master is gone keeps its delay
// levels and timers going on the slave of least id.
//
//   - Every broker of the group registers with enableActingMaster and its
//     own expiry (brokerNotActiveTimeoutMillis), heartbeats the name
//     servers with BROKER_HEARTBEAT (904) every brokerHeartbeatInterval,
//     and reads its group's members (GET_BROKER_MEMBER_GROUP, 901) every
//     syncBrokerMemberGroupPeriod; a name server with
//     notifyMinBrokerIdChanged also tells it at once
//     (NOTIFY_MIN_BROKER_ID_CHANGE, 905).
//   - A slave whose id is the group's least (the master expired) runs the
//     special services (setSpecialServices, stock
//     changeSpecialServiceStatus): delay-level delivery, timer dequeue,
//     the transaction check and POP revive, from its replicated store;
//     when the master is back (least id 0) it holds them again. Their
//     state is its own (delayOffset.json and the check's progress, copied
//     from the master while it was alive; its timer checkpoint; the revive
//     log it followed), so what the master delivered after the last copy
//     is delivered again: duplicates, never a loss or an early delivery
//     (broker/transaction/takeover.go, broker/pop/takeover.go). What the
//     returning master does is below (Hand-back).
//   - The slave's store refuses puts, so what the services deliver goes
//     through the escape bridge (EscapeBridge.putMessage): with
//     enableRemoteEscape, sent to the master of another broker group of
//     the topic; without it, refused (SERVICE_NOT_AVAILABLE), and the
//     service retries later with its offset kept. The transaction check
//     escapes each undecided half message as a prepared message (the
//     receiving master checks it); a revive trigger the timer store
//     delivers goes to the local POP service, which escapes the revived
//     message.
//   - Consumers commit offsets to the slave as to any slave
//     (UPDATE_CONSUMER_OFFSET is stored, role.go).
//
// With compatibleWithOldNameSrv (true, as stock) the broker speaks to the
// name server only in 4.x codes: its heartbeat is QUERY_DATA_VERSION (322,
// BrokerOuterAPI.sendHeartbeatViaDataVersion: the topic table's
// dataVersion, which renews the registration when it is unchanged) and
// its group's members are the broker addresses of its group in the route
// of rmq_sys_SYNC_BROKER_MEMBER_<brokerName> (getBrokerMemberGroup-
// Compatible), a topic every broker creates (perm INHERIT, 1/1 queues,
// TopicConfigManager) and whose route the name server never rewrites.
// Set to false, it sends BROKER_HEARTBEAT (904) and GET_BROKER_MEMBER_GROUP
// (901), which only a 5.x name server serves.
//
// # Hand-back
//
// When the master comes back (the group's least id is 0 again: 905, or the
// 901/322 polls) the slave holds its services. The master resumes from its
// own progress, which stopped when it went: left alone, it would deliver
// again everything the slave delivered while acting, duplicates of the
// whole acting period.
//
// 5.3.3 bounds them only in its pre-online phase: a master with
// totalReplicas > 1 and enableSlaveActingMaster starts isolated
// (BrokerController.start: isIsolated, no changeSpecialServiceStatus, no
// registration), and BrokerPreOnlineService.prepareForMasterOnline, for
// each member of its group (901), sends it the master's HA address (906),
// waits for its HA connection to reach TRANSFER, then syncMetadataReverse:
// GET_ALL_DELAY_OFFSET (45), GET_ALL_CONSUMER_OFFSET (43) and
// GET_TIMER_CHECK_POINT (60) from the slave, each taken whole when the
// slave's dataVersion is not older than the master's (delayOffset.json
// rewritten and ScheduleMessageService.load; the consumer offset table
// putAll, which carries the transaction check's progress, the offsets of
// CID_RMQ_SYS_TRANS, and POP revive's, the revive group's; TimerCheckpoint
// lastReadTimeMs and masterTimerQueueOffset). Only then startService runs
// the special services and registers; the slave stops when the name server
// tells it (onMinBrokerChange, changeSpecialServiceStatus(false)), so what
// it delivers between the master's read and that stop is delivered twice.
// Nothing checks that the master holds what the slave's progress covers.
// Without pre-online (totalReplicas 1, the default, or skipPreOnline)
// nothing is pulled: start runs changeSpecialServiceStatus(true) at once,
// and BrokerController.onMasterOnline (a slave's side: 906, wakeupHAClient),
// SlaveSynchronize (slave from master only) and the services' own starts
// (ScheduleMessageService.start loads its own offsets,
// TimerMessageStore.syncLastReadTimeMs its own checkpoint) never ask the
// slave.
//
// rmq has no pre-online phase; its master asks at Start instead, before its
// delay levels, timers and transaction check run and before it registers
// (so while the slave still acts), takeBackFromActingSlave: the slave's
// delay offsets (45), consumer offsets (43, of which only the check's
// half-queue progress is taken) and timer checkpoint (60), taken only where
// this store holds what they cover (its comment says how), forward only.
// Each is progress past real deliveries: a level's offset moves past a
// message only once the escape bridge stored it (schedule deliverDue; a
// refused escape keeps it), the timer checkpoint's read time passes a slot
// only once its deliveries were stored (timer put retries a refused one),
// and the check's walk passes a half message only once it is decided or
// escaped (transaction escapeHalf). What the slave delivers between the
// read and its stop (the 905 or the next poll after this master registers)
// is delivered again: duplicates bounded by that window. POP revive is not
// taken: the acting slave forgets what it revived in memory only (it cannot
// write the done record, pop/takeover.go), and no stock code reports it;
// the master revives again what was in flight when it went, as before.
//
// A slave that learns its master is back without its HA address (the
// member polls; a 905 without haBrokerAddr) asks the master for it with
// EXCHANGE_BROKER_HA_INFO (906, BrokerController.onMasterOnline,
// retrieveBrokerHaInfo); every broker serves 906 (processExchangeBrokerHAInfo).
// 5.3.3's other use of 906, a master with totalReplicas > 1 telling its
// slaves its HA address before it registers (BrokerPreOnlineService), has
// no counterpart: rmq has no pre-online phase.

// ActingMasterConfig holds the slave-acting-master keys (5.3.3 BrokerConfig).
type ActingMasterConfig struct {
	EnableSlaveActingMaster bool `conf:"enableSlaveActingMaster"`
	// EnableRemoteEscape lets an acting master send what its services
	// deliver to the master of another broker group.
	EnableRemoteEscape bool `conf:"enableRemoteEscape"`
	// BrokerHeartbeatInterval is the 904 period (ms).
	BrokerHeartbeatInterval int `conf:"brokerHeartbeatInterval"`
	// BrokerNotActiveTimeoutMillis is the expiry the broker registers with
	// (heartbeatTimeoutMillis) in acting-master mode.
	BrokerNotActiveTimeoutMillis int64 `conf:"brokerNotActiveTimeoutMillis"`
	// SyncBrokerMemberGroupPeriod is the 901 period (ms).
	SyncBrokerMemberGroupPeriod int `conf:"syncBrokerMemberGroupPeriod"`
	// CompatibleWithOldNameSrv heartbeats with QUERY_DATA_VERSION and reads
	// the group's members from a system topic's route instead of 904/901.
	CompatibleWithOldNameSrv bool `conf:"compatibleWithOldNameSrv"`
}

func defaultActingMasterConfig() ActingMasterConfig {
	return ActingMasterConfig{BrokerHeartbeatInterval: 1000, BrokerNotActiveTimeoutMillis: 10000, SyncBrokerMemberGroupPeriod: 1000,
		CompatibleWithOldNameSrv: true}
}

func (c *ActingMasterConfig) validate() []error {
	var errs []error
	if c.EnableSlaveActingMaster && (c.BrokerHeartbeatInterval <= 0 || c.SyncBrokerMemberGroupPeriod <= 0 || c.BrokerNotActiveTimeoutMillis <= 0) {
		errs = append(errs, fmt.Errorf("brokerHeartbeatInterval, syncBrokerMemberGroupPeriod and brokerNotActiveTimeoutMillis must be > 0 with enableSlaveActingMaster"))
	}
	return errs
}

// actingMaster is a broker's view of its group (BrokerController's
// minBrokerIdInGroup, minBrokerAddrInGroup, isScheduleServiceStart).
type actingMaster struct {
	mu       sync.Mutex
	minID    int64
	minAddr  string
	escapeRR atomic.Uint32 // rotates the escape's queue choice
	// initMaxOffset is the commitlog's end at New (getBrokerInitMaxOffset),
	// the masterFlushOffset a master answers 906 with.
	initMaxOffset int64

	// special orders the switches of the special services; running is
	// whether they run (setSpecialServices).
	special sync.Mutex
	running bool
}

// actingMasterOn reports whether this broker is a slave in acting-master
// mode (only a slave follows the group's least id).
func (b *Broker) actingMasterOn() bool { return b.opts.EnableSlaveActingMaster && b.opts.isSlave() }

// SpecialServicesRunning reports whether delay-level delivery, timer
// dequeue, the transaction check and POP revive run
// (isSpecialServiceRunning).
func (b *Broker) SpecialServicesRunning() bool {
	b.am.special.Lock()
	defer b.am.special.Unlock()
	return b.am.running
}

// MinBrokerIDInGroup is the least broker id of the group as last learnt
// (0 until the name server says otherwise).
func (b *Broker) MinBrokerIDInGroup() int64 {
	b.am.mu.Lock()
	defer b.am.mu.Unlock()
	return b.am.minID
}

// startActingMaster starts, at Start, a slave's services held, and the
// heartbeat and member loops of any broker in acting-master mode.
func (b *Broker) startActingMaster() {
	if !b.opts.EnableSlaveActingMaster {
		return
	}
	if b.opts.isSlave() {
		b.startSpecialServicesHeld()
	}
	if len(b.opts.NamesrvAddrs()) == 0 {
		return
	}
	b.bg.Add(1)
	go b.every(time.Duration(b.opts.BrokerHeartbeatInterval)*time.Millisecond, b.sendHeartbeat)
	if b.opts.isSlave() {
		b.bg.Add(1)
		go b.every(time.Duration(b.opts.SyncBrokerMemberGroupPeriod)*time.Millisecond, b.syncBrokerMemberGroup)
	}
}

// sendHeartbeat sends BROKER_HEARTBEAT, oneway and without a brokerId (as
// BrokerOuterAPI.sendHeartbeat: a name server hosting a controller tells
// it from a controller-mode heartbeat by that), to every name server; with
// compatibleWithOldNameSrv, QUERY_DATA_VERSION with the topic table's
// dataVersion instead (sendHeartbeatViaDataVersion).
func (b *Broker) sendHeartbeat() {
	addr := b.runtime().addr()
	req := func() *remoting.Command {
		h := remoting.BrokerHeartbeatRequestHeader{ClusterName: b.opts.BrokerClusterName, BrokerAddr: addr, BrokerName: b.opts.BrokerName}
		return remoting.NewRequest(remoting.BrokerHeartbeat, h.Fields(), nil)
	}
	if b.opts.CompatibleWithOldNameSrv {
		dv := b.topics.DataVersion()
		req = func() *remoting.Command {
			h := remoting.BrokerIdentityRequestHeader{BrokerName: b.opts.BrokerName, BrokerAddr: addr, ClusterName: b.opts.BrokerClusterName, BrokerID: b.opts.BrokerID}
			return remoting.NewRequest(remoting.QueryDataVersion, h.Fields(), remoting.MarshalBody(&dv))
		}
	}
	for _, ns := range b.opts.NamesrvAddrs() {
		if err := b.nsCli.Oneway(ns, req()); err != nil {
			if e := b.refusals.Warn(&b.log, "acting-master heartbeat", remoting.BrokerHeartbeat); e != nil {
				e.Err(err).Str("namesrv", ns).Msg("broker heartbeat not sent")
			}
		}
	}
}

// syncBrokerMemberGroup reads the group's members from the first name
// server that answers and follows its least id (syncBrokerMemberGroup,
// updateMinBroker).
func (b *Broker) syncBrokerMemberGroup() {
	for _, ns := range b.opts.NamesrvAddrs() {
		addrs := b.brokerMemberGroup(ns)
		if len(addrs) == 0 {
			continue
		}
		id := slices.Min(slices.Collect(maps.Keys(addrs)))
		b.am.mu.Lock()
		offline := ""
		if id > b.am.minID {
			offline = b.am.minAddr
		}
		b.am.mu.Unlock()
		b.updateMinBroker(id, addrs[id], offline, "")
		return
	}
}

// brokerMemberGroup asks the name server ns for the addresses of the
// group's live members: GET_BROKER_MEMBER_GROUP, or with
// compatibleWithOldNameSrv the group's brokers in the route of its
// rmq_sys_SYNC_BROKER_MEMBER_ topic (getBrokerMemberGroupCompatible). nil
// when ns does not answer or knows none.
func (b *Broker) brokerMemberGroup(ns string) map[int64]string {
	if b.opts.CompatibleWithOldNameSrv {
		topic := topicgroup.SyncBrokerMemberTopicPrefix + b.opts.BrokerName
		h := remoting.GetRouteInfoRequestHeader{Topic: topic}
		resp, err := b.nsCli.InvokeTimeout(ns, remoting.NewRequest(remoting.GetRouteinfoByTopic, h.Fields(), nil), slaveSyncTimeout)
		if err != nil || resp.Code != remoting.Success {
			return nil
		}
		var rd remoting.TopicRouteData
		if err := fastjson.Unmarshal(resp.Body, &rd); err != nil {
			return nil
		}
		for _, bd := range rd.BrokerDatas {
			if bd != nil && bd.BrokerName == b.opts.BrokerName && bd.Cluster == b.opts.BrokerClusterName {
				return bd.BrokerAddrs
			}
		}
		return nil
	}
	h := remoting.GetBrokerMemberGroupRequestHeader{ClusterName: b.opts.BrokerClusterName, BrokerName: b.opts.BrokerName}
	resp, err := b.nsCli.InvokeTimeout(ns, remoting.NewRequest(remoting.GetBrokerMemberGroup, h.Fields(), nil), slaveSyncTimeout)
	if err != nil || resp.Code != remoting.Success {
		return nil
	}
	body, err := remoting.DecodeGetBrokerMemberGroupResponseBody(resp.Body)
	if err != nil || body.BrokerMemberGroup == nil {
		return nil
	}
	return body.BrokerMemberGroup.BrokerAddrs
}

// processNotifyMinBrokerIDChange serves NOTIFY_MIN_BROKER_ID_CHANGE (905,
// AdminBrokerProcessor.notifyMinBrokerIdChange).
func (b *Broker) processNotifyMinBrokerIDChange(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.NotifyMinBrokerIDChangeRequestHeader](req)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	if h.MinBrokerID != nil {
		b.updateMinBroker(*h.MinBrokerID, h.MinBrokerAddr, h.OfflineBrokerAddr, h.HABrokerAddr)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// updateMinBroker follows a change of the group's least id
// (onMinBrokerChange): the special services run on the broker whose id it
// is; a master gone offline is no longer followed, one back online is
// followed again at its HA address.
func (b *Broker) updateMinBroker(id int64, addr, offline, haAddr string) {
	if !b.actingMasterOn() {
		return
	}
	if b.followMinBroker(id, addr, offline, haAddr) {
		b.retrieveMasterHAInfo(addr)
	}
}

// followMinBroker is updateMinBroker under the group lock; it reports
// whether the master came back without its HA address, which is then
// asked for (onMasterOnline) once the lock is released.
func (b *Broker) followMinBroker(id int64, addr, offline, haAddr string) (askHA bool) {
	b.am.mu.Lock()
	defer b.am.mu.Unlock()
	if id == b.am.minID {
		return false
	}
	b.log.Info().Int64("from", b.am.minID).Int64("to", id).Str("minBrokerAddr", addr).Str("offline", offline).Msg("min broker id in group changed")
	b.am.minID, b.am.minAddr = id, addr
	b.setSpecialServices(id == b.opts.BrokerID)
	if offline != "" && offline == b.MasterAddr() {
		none := ""
		b.masterAddr.Store(&none)
		if !b.haPinned() {
			b.setHAMasterAddr("")
		}
	}
	if id == namesrvMasterID && addr != "" {
		b.masterAddr.Store(&addr)
		if haAddr != "" && !b.haPinned() {
			b.setHAMasterAddr(haAddr)
		}
		return haAddr == "" && !b.haPinned()
	}
	return false
}

// retrieveMasterHAInfo asks the master at addr for its HA address with
// EXCHANGE_BROKER_HA_INFO (906, a request without masterHaAddress;
// BrokerOuterAPI.retrieveBrokerHaInfo) and follows it.
func (b *Broker) retrieveMasterHAInfo(addr string) {
	resp, err := b.nsCli.InvokeTimeout(addr, remoting.NewRequest(remoting.ExchangeBrokerHAInfo, nil, nil), slaveSyncTimeout)
	if err == nil && resp.Code != remoting.Success {
		err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
	}
	var h remoting.ExchangeHAInfoHeader
	if err == nil {
		h, err = remoting.DecodeHeader[remoting.ExchangeHAInfoHeader](resp)
	}
	if err != nil {
		b.log.Warn().Err(err).Str("master", addr).Msg("retrieve the master's HA info failed")
		return
	}
	if h.MasterHAAddress != "" && !b.haPinned() {
		b.setHAMasterAddr(h.MasterHAAddress)
	}
}

// processExchangeBrokerHAInfo serves EXCHANGE_BROKER_HA_INFO (906,
// AdminBrokerProcessor.updateBrokerHaInfo). A request with masterHaAddress
// sets a slave's master (its HA address unless haMasterAddress pins it,
// and masterAddress); one without it is answered by a master with its HA
// address, its listen address and the commitlog's end at its start, and by
// a slave with no fields. Always SUCCESS, as stock.
func (b *Broker) processExchangeBrokerHAInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.ExchangeHAInfoHeader](req)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	switch {
	case h.MasterHAAddress != "":
		if b.opts.isSlave() { // a master has no HA client to point
			if !b.haPinned() {
				b.setHAMasterAddr(h.MasterHAAddress)
			}
			if h.MasterAddress != "" {
				b.masterAddr.Store(&h.MasterAddress)
			}
		}
	case b.opts.BrokerID == namesrvMasterID:
		rc := b.runtime()
		off := b.am.initMaxOffset
		for k, v := range (&remoting.ExchangeHAInfoHeader{MasterHAAddress: b.haServerAddr(rc), MasterFlushOffset: &off, MasterAddress: rc.addr()}).Fields() {
			resp.SetExt(k, v)
		}
	}
	return resp
}

// takeBackFromActingSlave runs on a master in acting-master mode at Start,
// before its delay levels, timers and transaction check run: it asks the slave
// that acted for it (the group's least id but its own, from the name
// server) for that slave's progress and moves its own forward to it, where
// that is safe, so that what the slave delivered while acting is not
// delivered again (see "Hand-back" above).
//
// The slave's progress counts only where this store holds everything it
// covers: the slave's commitlog end (read after the progress, so covering
// it) must be within this store's end at New, before any put of this
// process (the slave's store is a replica of this one's prefix; one longer
// than it holds what this master lost, and the offsets past its end are
// being written with other messages now), and dispatched. Each level then
// moves forward to the slave's offset within its queue
// (schedule.AdvanceOffsets), and the slave's timer checkpoint becomes the
// timer store's rule through the path a slave takes its master's by
// (timer.CopyMaster, adopted when the dequeue starts), and the check's
// half-queue progress moves forward to the slave's
// (transaction.AdvanceProgress). A slave that does not answer, or whose
// store is not covered, leaves the master's own progress: duplicates,
// never a loss. POP revive resumes from the master's own (see above).
func (b *Broker) takeBackFromActingSlave() {
	if !b.opts.EnableSlaveActingMaster || b.opts.BrokerID != namesrvMasterID || b.opts.isSlave() {
		return
	}
	slave := b.actingSlaveAddr()
	if slave == "" {
		return
	}
	warn := func(err error, what string) {
		b.log.Warn().Err(err).Str("slave", slave).Msg("acting-master hand-back: " + what + "; this master's own progress is kept (duplicates of what the slave delivered)")
	}
	delays, _, err := b.callMaster(slave, remoting.GetAllDelayOffset)
	if err != nil {
		warn(err, "the slave's delay offsets not read")
		return
	}
	offsets, _, err := b.callMaster(slave, remoting.GetAllConsumerOffset)
	if err != nil {
		warn(err, "the slave's consumer offsets not read")
		return
	}
	var ck *timer.StockCheckpoint
	if b.timers != nil {
		// A slave without a timer store (timerWheelEnable=false, a 4.x
		// broker) answers with an error: the delay levels are still taken.
		body, _, err := b.callMaster(slave, remoting.GetTimerCheckPoint)
		var c timer.StockCheckpoint
		if err == nil {
			c, err = timer.DecodeStockCheckpoint(body)
		}
		if err != nil {
			warn(err, "the slave's timer checkpoint not taken")
		} else {
			ck = &c
		}
	}
	slaveMax, err := b.masterMaxPhyOffset(slave)
	if err != nil {
		warn(err, "the slave's commitlog end not read")
		return
	}
	if slaveMax > b.am.initMaxOffset {
		warn(fmt.Errorf("slave commitlog ends at %d, this store's at %d", slaveMax, b.am.initMaxOffset), "the slave holds what this store does not")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), slaveSyncTimeout)
	err = b.store.WaitDispatched(ctx, slaveMax)
	cancel()
	if err != nil {
		warn(err, "this store's dispatch does not reach the slave's commitlog end")
		return
	}
	levels, err := b.sched.AdvanceOffsets(delays)
	if err != nil {
		warn(err, "delay offsets not taken")
	}
	txTaken := false
	if half, ok, err := clients.OffsetInBody(offsets, message.GroupTransCheck, message.TopicTransHalf, 0); err != nil {
		warn(err, "the slave's transaction check progress not decoded")
	} else if ok {
		txTaken = b.tx.AdvanceProgress(half)
	}
	if ck != nil {
		if err := b.timers.CopyMaster(*ck, slaveMax); err != nil {
			warn(err, "timer checkpoint not taken")
		}
	}
	b.log.Info().Str("slave", slave).Int("delayLevels", levels).Bool("timerCheckpointRead", ck != nil).Bool("transactionCheck", txTaken).
		Msg("acting-master hand-back: progress taken from the slave that acted")
}

// actingSlaveAddr is the address of the slave that acts while this master
// is gone: the group's member of least id, as the first name server that
// answers knows the group before this master registers. "" when no name
// server knows the group, or when it still lists a master (id 0: this
// master's previous registration has not expired, so no slave acted; what
// a slave would answer is a copy of this master's progress).
func (b *Broker) actingSlaveAddr() string {
	for _, ns := range b.opts.NamesrvAddrs() {
		addrs := b.brokerMemberGroup(ns)
		if len(addrs) == 0 {
			continue
		}
		if _, ok := addrs[namesrvMasterID]; ok {
			return ""
		}
		return addrs[slices.Min(slices.Collect(maps.Keys(addrs)))]
	}
	return ""
}

// namesrvMasterID is MixAll.MASTER_ID.
const namesrvMasterID = 0

// startSpecialServicesHeld starts, on a slave at Start, the special
// services held (setSpecialServices(true) lets them run): their loops
// follow the replicated store from then on. deliveryStarted lets the
// dispatcher and retention treat them as running (lifecycle.go), as on a
// master. The transaction check and POP revive are held from New on a
// slave's store.
func (b *Broker) startSpecialServicesHeld() {
	b.sched.SetActive(false)
	if b.timers != nil {
		b.timers.SetDequeue(false)
	}
	b.startSpecialServices()
}

// startSpecialServices starts the loops of the delay, timer, transaction
// and POP services, after deliveryStarted (lifecycle.go Start says why).
func (b *Broker) startSpecialServices() {
	b.deliveryStarted.Store(true)
	b.sched.Start()
	if b.timers != nil {
		b.timers.Start()
	}
	b.tx.Start()
	b.pop.Start()
}

// setSpecialServices is the one switch of the master-only services (5.3.3
// changeSpecialServiceStatus): delay-level delivery, timer dequeue, the
// transaction check and POP revive run (on) or are held (off), together.
// The services must have been started (Start on a master,
// startSpecialServicesHeld on a slave); the switch only holds or resumes
// them, each from its persisted progress, and returns once a pass in
// flight has ended. Switching to the current state does nothing. Callers:
// the acting-master transitions (updateMinBroker) and controller-mode role
// changes. On a store that refuses puts (a slave's) the services write
// through the escape bridge (escapePut); on a writable one, locally. A role
// change that makes the store writable does so before switching on (the
// check would otherwise escape what it can now decide), and one that makes
// it a slave's switches off first.
func (b *Broker) setSpecialServices(on bool) {
	b.am.special.Lock()
	defer b.am.special.Unlock()
	if b.am.running == on {
		return
	}
	b.am.running = on
	b.log.Info().Bool("running", on).Msg("special services (delay levels, timers, transaction check, POP revive) switched")
	b.sched.SetActive(on)
	if b.timers != nil {
		b.timers.SetDequeue(on)
	}
	b.tx.SetActive(on)
	b.pop.SetActive(on)
}

// errNoEscape is the escape bridge's refusal without remote escape
// (PutMessageStatus.SERVICE_NOT_AVAILABLE).
var errNoEscape = fmt.Errorf("%w: acting master without enableRemoteEscape", store.ErrSlave)

// escapePut is the put of the delivery services (EscapeBridge.putMessage):
// into the local store on a master, to another group's master from an
// acting master with enableRemoteEscape, refused otherwise. A POP revive
// trigger the timer store delivers on an acting master is the local POP
// service's (pop.Service.Trigger), never another group's.
func (b *Broker) escapePut(m *message.Message) (*store.PutResult, error) {
	if !b.isSlave() {
		return b.store.PutMessage(m)
	}
	if b.pop.Trigger(m) {
		return &store.PutResult{Status: store.PutOK, Count: 1}, nil
	}
	if !b.opts.EnableSlaveActingMaster || !b.opts.EnableRemoteEscape {
		return nil, errNoEscape
	}
	return b.putRemote(m)
}

// escapeTimeout is EscapeBridge's SEND_TIMEOUT.
const escapeTimeout = 3 * time.Second

// putRemote sends m to a writable queue of its topic on the master of
// another broker group (putMessageToRemoteBroker), as SEND_MESSAGE.
func (b *Broker) putRemote(m *message.Message) (*store.PutResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), escapeTimeout)
	defer cancel()
	route, err := b.NamesrvRoute(ctx, m.Topic)
	if err != nil {
		return nil, fmt.Errorf("escape %s: %w", m.Topic, err)
	}
	type target struct {
		addr   string
		queues int32
	}
	var targets []target
	for _, q := range route.Queues {
		if q.BrokerName == b.opts.BrokerName || q.Perm&topicgroup.PermWrite == 0 || q.WriteQueueNums <= 0 {
			continue
		}
		for _, bd := range route.Brokers {
			if bd.BrokerName == q.BrokerName && bd.BrokerAddrs[namesrvMasterID] != "" {
				targets = append(targets, target{bd.BrokerAddrs[namesrvMasterID], q.WriteQueueNums})
			}
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: escape %s: no master of another broker group", store.ErrSlave, m.Topic)
	}
	n := b.am.escapeRR.Add(1)
	t := targets[int(n)%len(targets)]
	props := m.RawProperties
	if m.Properties != nil {
		props = message.MarshalProperties(m.Properties)
	}
	group := m.Properties[message.PropProducerGroup]
	if group == "" {
		group = escapeProducerGroup
	}
	ext := map[string]string{
		"producerGroup": group, "topic": m.Topic, "defaultTopic": message.TopicAutoCreateKey, "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(int(uint32(n) % uint32(t.queues))), "sysFlag": strconv.Itoa(int(m.SysFlag)),
		"bornTimestamp": strconv.FormatInt(m.BornTimestamp, 10), "flag": strconv.Itoa(int(m.Flag)),
		"properties": props, "reconsumeTimes": strconv.Itoa(int(m.ReconsumeTimes)), "unitMode": "false", "batch": "false",
	}
	resp, err := b.nsCli.Invoke(ctx, t.addr, remoting.NewRequest(remoting.SendMessage, ext, m.Body))
	if err != nil {
		return nil, fmt.Errorf("escape %s to %s: %w", m.Topic, t.addr, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("%w: escape %s to %s: code %d %s", errEscapeRefused, m.Topic, t.addr, resp.Code, resp.Remark)
	}
	return &store.PutResult{Status: store.PutOK, Count: 1}, nil
}

// escapeProducerGroup is the group of an escaped message without one.
const escapeProducerGroup = "rmq_sys_ESCAPE_BRIDGE"

var errEscapeRefused = errors.New("escape refused")
