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

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
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
//     is delivered again, and the returning master delivers again what
//     the slave escaped: duplicates, never a loss or an early delivery
//     (broker/transaction/takeover.go, broker/pop/takeover.go).
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
// rmq speaks 901/904 to the name server, as a 5.3.3 broker with
// compatibleWithOldNameSrv=false; stock's default (true) reads the
// members from the route of rmq_sys_SYNC_BROKER_MEMBER_<brokerName>
// instead, which rmq does not create.

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
}

func defaultActingMasterConfig() ActingMasterConfig {
	return ActingMasterConfig{BrokerHeartbeatInterval: 1000, BrokerNotActiveTimeoutMillis: 10000, SyncBrokerMemberGroupPeriod: 1000}
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
// it from a controller-mode heartbeat by that), to every name server.
func (b *Broker) sendHeartbeat() {
	h := remoting.BrokerHeartbeatRequestHeader{ClusterName: b.opts.BrokerClusterName, BrokerAddr: b.runtime().addr(), BrokerName: b.opts.BrokerName}
	for _, ns := range b.opts.NamesrvAddrs() {
		if err := b.nsCli.Oneway(ns, remoting.NewRequest(remoting.BrokerHeartbeat, h.Fields(), nil)); err != nil {
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
	h := remoting.GetBrokerMemberGroupRequestHeader{ClusterName: b.opts.BrokerClusterName, BrokerName: b.opts.BrokerName}
	for _, ns := range b.opts.NamesrvAddrs() {
		resp, err := b.nsCli.InvokeTimeout(ns, remoting.NewRequest(remoting.GetBrokerMemberGroup, h.Fields(), nil), slaveSyncTimeout)
		if err != nil || resp.Code != remoting.Success {
			continue
		}
		body, err := remoting.DecodeGetBrokerMemberGroupResponseBody(resp.Body)
		if err != nil || body.BrokerMemberGroup == nil || len(body.BrokerMemberGroup.BrokerAddrs) == 0 {
			continue
		}
		addrs := body.BrokerMemberGroup.BrokerAddrs
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
	b.am.mu.Lock()
	defer b.am.mu.Unlock()
	if id == b.am.minID {
		return
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
	}
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
// through the escape bridge (escapePut).
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
