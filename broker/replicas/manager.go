package replicas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Transport is what the manager needs of a remoting client (the broker's
// name-server client serves).
type Transport interface {
	InvokeTimeout(addr string, req *remoting.Command, d time.Duration) (*remoting.Command, error)
	Oneway(addr string, req *remoting.Command) error
}

// HA is what the manager needs of the AutoSwitch HA service
// (store/ha/autoswitch.Service, through the broker's adapter).
type HA interface {
	// ChangeToMaster makes the service a master of epoch: it refuses an
	// epoch below its last one, truncates what was not dispatched and
	// appends (epoch, max offset) before the broker takes writes.
	ChangeToMaster(epoch int32) error
	// ChangeToSlave makes it follow the master; its HA address comes
	// later, from the name server's register answer.
	ChangeToSlave(masterHAAddr string, masterEpoch int32, selfBrokerID int64) error
	// SetSyncStateSet hands it the set the controller accepted.
	SetSyncStateSet(ids []int64, epoch int32)
	// SetLocalBrokerID tells it this broker's controller id once known.
	SetLocalBrokerID(id int64)
	ConfirmOffset() int64
	LastEpoch() int32
	EpochEntries() []remoting.EpochEntry
}

// Broker is what the manager needs of the broker around it.
type Broker interface {
	// MaxPhyOffset is the commitlog's end (heartbeats, 1007).
	MaxPhyOffset() int64
	// BecomeMaster runs after the HA service changed to master: brokerId
	// 0, SYNC_MASTER, the master-only services on, no SlaveSynchronize.
	BecomeMaster(epoch int32)
	// BecomeSlave: SLAVE with brokerID, the master-only services off,
	// SlaveSynchronize from masterAddr. It runs before the HA service
	// changes to slave, so that no write is taken after the switch.
	BecomeSlave(brokerID int64, masterAddr string, epoch int32)
	// SetFenced holds name-server registration and writes while the
	// broker has no role yet (stock setIsolated and the store's fence).
	// The manager calls it, BecomeMaster and BecomeSlave one at a time
	// (under its lock): none of them may call back into the manager.
	SetFenced(fenced bool)
	// RegisterNameServers re-registers soon, off the caller's goroutine
	// (registerBrokerWhenRoleChange).
	RegisterNameServers()
	// BrokerID is brokerConfig.brokerId now (0 on a master).
	BrokerID() int64
}

// Config is the manager's part of the broker configuration.
type Config struct {
	ClusterName, BrokerName string
	// BrokerAddr is ip:port, registered with the controller and in the
	// registration check code.
	BrokerAddr string
	// ControllerAddrs resolves controllerAddr (split on ';', or looked up
	// in DNS); it is called at start and every controllerAddrRefresh.
	ControllerAddrs func() []string
	// IdentityPath is storePathBrokerIdentity.
	IdentityPath string
	FS           store.FS

	HeartbeatInterval            time.Duration // brokerHeartbeatInterval
	SyncBrokerMetadataPeriod     time.Duration
	SyncControllerMetadataPeriod time.Duration
	CheckSyncStateSetPeriod      time.Duration
	ControllerHeartbeatTimeout   time.Duration // controllerHeartBeatTimeoutMills
	ElectionPriority             int32

	Clock  clock.Clock
	Logger zerolog.Logger // with its component set by the caller
	// Jitter returns a random duration in [0, d) (the random sleep between
	// register tries); nil is math/rand.
	Jitter func(d time.Duration) time.Duration
}

// Stock's fixed timings (ReplicasManager, BrokerOuterAPI).
const (
	retryInterval        = 5 * time.Second // RETRY_INTERVAL_SECOND
	firstPeriodicDelay   = 3 * time.Second // initial delay of the 1004, 1005 and 1001 tasks
	callTimeout          = 3 * time.Second
	metadataTries        = 3
	registerTries        = 5
	registerJitter       = time.Second
	afterReRegister      = 2 * time.Second // the sleep after a 2008 re-register
	controllerAddrPeriod = 2 * time.Minute // updateControllerAddr
)

// State is the startup state (ReplicasManager.State).
type State int32

const (
	StateInitial State = iota
	StateFirstSyncDone
	StateRegistered
	StateRunning
	StateShutdown
)

// regState is RegisterState: how far the persisted registration got.
type regState int

const (
	regInitial regState = iota
	regTempDone
	regMetaDone
	regDone
)

// Manager is ReplicasManager: the broker's side of the controller.
//
// One goroutine (run) does the startup and every periodic task in turn, as
// the calls are remote and their order matters; heartbeats have their own,
// so that a slow controller call never delays them. Role changes (from a
// task, or from NOTIFY_BROKER_ROLE_CHANGED on a request goroutine) hold mu
// as stock holds the manager's monitor; mu is never held across a remote
// call: the 1001 report and the name-server registration a role change
// asks for run later on their own goroutines. A role change does hold mu
// across the HA service's switch (truncation, the dispatch wait), so what
// the heartbeats read is not under mu: the controller id is an atomic and
// the controller addresses have their own lock (netMu), as stock's
// heartbeat task reads volatile fields and never waits for the monitor.
type Manager struct {
	cfg   Config
	tr    Transport
	ha    HA
	br    Broker
	files identityFiles
	log   zerolog.Logger
	rl    *ratelog.Limiter

	mu           sync.Mutex
	state        State
	reg          regState     // run's goroutine only
	ident        Identity     // the identity file read last (run's goroutine)
	controllerID atomic.Int64 // 0 until known (ids start at 1); set under mu
	netMu        sync.Mutex   // guards addrs and leader (never held with mu taken after it)
	addrs        []string
	leader       string
	masterID     int64 // 0 when no master is known
	masterAddr   string
	masterEpoch  int32
	sss          []int64
	sssEpoch     int32
	master       bool
	proposed     []int64 // the HA service's last proposal not yet accepted

	fenced  atomic.Bool
	kick    chan struct{} // report the sync state set now
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
}

// New returns a manager; Start runs it.
func New(cfg Config, tr Transport, ha HA, br Broker) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d))) }
	}
	m := &Manager{
		cfg: cfg, tr: tr, ha: ha, br: br,
		files: identityFiles{path: cfg.IdentityPath, fs: cfg.FS},
		log:   cfg.Logger, // the broker names the component
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
	m.rl = ratelog.New(m.log, cfg.Clock, ratelog.DefaultInterval)
	m.fenced.Store(true)
	br.SetFenced(true)
	return m
}

// Start begins the startup in the background: find the controller leader,
// register, elect if there is no master, then the periodic tasks. Every
// failure is retried (every retryInterval), as stock.
func (m *Manager) Start() {
	m.refreshAddrs()
	m.wg.Add(2)
	go m.run()
	go m.heartbeats()
}

// Close stops every task and waits for them.
func (m *Manager) Close() {
	m.stopped.Do(func() {
		m.mu.Lock()
		m.state = StateShutdown
		m.mu.Unlock()
		close(m.stop)
	})
	m.wg.Wait()
}

// OnSyncStateSetChange is the HA service's proposal of a new sync state
// set (expand or shrink); the master reports it with 1001 at once, and
// again every checkSyncStateSetPeriod until the controller took it.
func (m *Manager) OnSyncStateSetChange(proposed []int64) {
	m.mu.Lock()
	m.proposed = remoting.SortedIDs(append(slices.Clone(proposed), m.controllerID.Load()))
	m.mu.Unlock()
	m.kickReport()
}

func (m *Manager) kickReport() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// sleep waits d of the clock; false when the manager stopped meanwhile.
func (m *Manager) sleep(d time.Duration) bool {
	t := m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-m.stop:
		return false
	case <-t.C():
		return true
	}
}

func (m *Manager) run() {
	defer m.wg.Done()
	for !m.startBasic() {
		if !m.sleep(retryInterval) {
			return
		}
	}
	m.log.Info().Int64("brokerControllerId", m.ControllerID()).Msg("replicas manager running")
	now := m.cfg.Clock.Now()
	next := map[string]time.Time{
		"broker":     now.Add(firstPeriodicDelay),
		"controller": now.Add(firstPeriodicDelay),
		"sss":        now.Add(firstPeriodicDelay),
		"addrs":      now.Add(controllerAddrPeriod),
	}
	periods := map[string]time.Duration{
		"broker": m.cfg.SyncBrokerMetadataPeriod, "controller": m.cfg.SyncControllerMetadataPeriod,
		"sss": m.cfg.CheckSyncStateSetPeriod, "addrs": controllerAddrPeriod,
	}
	for {
		first := ""
		for k, at := range next {
			if first == "" || at.Before(next[first]) || (at.Equal(next[first]) && k < first) {
				first = k
			}
		}
		t := clock.TimerAt(m.cfg.Clock, next[first])
		select {
		case <-m.stop:
			t.Stop()
			return
		case <-m.kick:
			t.Stop()
			m.checkAndReport()
			continue
		case <-t.C():
		}
		switch first {
		case "broker":
			m.syncBrokerMetadata()
		case "controller":
			m.updateControllerMetadata()
		case "sss":
			m.checkAndReport()
		case "addrs":
			m.refreshAddrs()
		}
		// Fixed rate: the next deadline follows the last one, and deadlines
		// missed while a task ran are skipped.
		now := m.cfg.Clock.Now()
		for !next[first].After(now) {
			next[first] = next[first].Add(periods[first])
		}
	}
}

// startBasic is startBasicService: it moves the state on as far as it can
// and reports whether the broker is running.
func (m *Manager) startBasic() bool {
	if m.State() == StateInitial {
		ok := false
		for i := 0; i < metadataTries && !ok; i++ {
			if ok = m.updateControllerMetadata(); !ok && !m.sleep(time.Second) {
				return false
			}
		}
		if !ok {
			m.log.Error().Strs("controllers", m.controllerAddrs()).Msg("failed to init controller metadata, maybe the controllers are not available")
			return false
		}
		m.setState(StateFirstSyncDone)
	}
	if m.State() == StateFirstSyncDone {
		for i := 0; i < registerTries; i++ {
			if m.register() {
				m.setState(StateRegistered)
				break
			}
			// Spread brokers that register at once (the id race).
			if !m.sleep(m.cfg.Jitter(registerJitter)) {
				return false
			}
		}
		if m.State() != StateRegistered {
			m.log.Error().Msg("register to controller failed 5 times")
			return false
		}
	}
	if m.State() == StateRegistered {
		m.sendHeartbeat()
		m.mu.Lock()
		known := m.masterID != 0
		m.mu.Unlock()
		if !known && !m.brokerElect() {
			return false
		}
		m.setState(StateRunning)
		// Under mu, as every BecomeMaster and BecomeSlave: the broker
		// sets its store's role from its fence and its role, and a role
		// change interleaved with the unfencing could leave a slave's
		// store taking puts or a master's refusing them.
		m.mu.Lock()
		m.fenced.Store(false)
		m.br.SetFenced(false)
		m.mu.Unlock()
		m.br.RegisterNameServers()
	}
	return m.State() == StateRunning
}

func (m *Manager) setState(s State) {
	m.mu.Lock()
	if m.state != StateShutdown {
		m.state = s
	}
	m.mu.Unlock()
	m.log.Info().Int32("state", int32(s)).Msg("replicas manager state changed")
}

// State is the startup state.
func (m *Manager) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// ControllerID is the id the controller gave this broker (0 before).
func (m *Manager) ControllerID() int64 { return m.controllerID.Load() }

// Role is what the manager knows of the broker set.
type Role struct {
	Master            bool
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
	ControllerLeader  string
	ControllerID      int64 // this broker's id in the set (0 before registration)
}

// Role returns the role state now.
func (m *Manager) Role() Role {
	leader := m.leaderAddr()
	m.mu.Lock()
	defer m.mu.Unlock()
	return Role{Master: m.master, MasterID: m.masterID, MasterAddr: m.masterAddr, MasterEpoch: m.masterEpoch,
		SyncStateSet: slices.Clone(m.sss), SyncStateSetEpoch: m.sssEpoch, ControllerLeader: leader, ControllerID: m.controllerID.Load()}
}

func (m *Manager) refreshAddrs() {
	if m.cfg.ControllerAddrs == nil {
		return
	}
	if a := m.cfg.ControllerAddrs(); len(a) > 0 {
		m.netMu.Lock()
		m.addrs = a
		m.netMu.Unlock()
	}
}

func (m *Manager) controllerAddrs() []string {
	m.netMu.Lock()
	defer m.netMu.Unlock()
	return slices.Clone(m.addrs)
}

func (m *Manager) leaderAddr() string {
	m.netMu.Lock()
	defer m.netMu.Unlock()
	return m.leader
}

// errCode is a controller answer other than the one expected.
type errCode struct {
	code   int32
	remark string
}

func (e *errCode) Error() string {
	return fmt.Sprintf("controller answered code %d: %s", e.code, e.remark)
}

func codeOf(err error) int32 {
	var e *errCode
	if errors.As(err, &e) {
		return e.code
	}
	return -1
}

// call sends req to addr and returns the answer when its code is one of ok
// (SUCCESS when none is named).
func (m *Manager) call(addr string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	if addr == "" {
		return nil, errors.New("no controller leader known")
	}
	resp, err := m.tr.InvokeTimeout(addr, req, callTimeout)
	if err != nil {
		return nil, err
	}
	if resp.Code == remoting.Success || slices.Contains(ok, resp.Code) {
		return resp, nil
	}
	return nil, &errCode{resp.Code, resp.Remark}
}

func (m *Manager) warn(what string, err error) {
	if e := m.rl.Warn(&m.log, "replicas_"+what, codeOf(err)); e != nil {
		e.Err(err).Str("leader", m.leaderAddr()).Msg(what + " failed")
	}
}

// updateControllerMetadata asks each controller for the leader (1005;
// any node answers) and keeps the first answer that names one.
func (m *Manager) updateControllerMetadata() bool {
	for _, a := range m.controllerAddrs() {
		resp, err := m.call(a, remoting.NewRequest(remoting.ControllerGetMetadataInfo, nil, nil))
		if err != nil {
			m.warn("get controller metadata", err)
			continue
		}
		h, err := remoting.DecodeHeader[remoting.GetMetaDataResponseHeader](resp)
		if err != nil || h.ControllerLeaderAddress == "" {
			continue
		}
		m.netMu.Lock()
		changed := m.leader != h.ControllerLeaderAddress
		m.leader = h.ControllerLeaderAddress
		m.netMu.Unlock()
		if changed {
			m.log.Info().Str("leader", h.ControllerLeaderAddress).Msg("controller leader address updated")
		}
		return true
	}
	return false
}

// register is the persisted registration: each step's outcome is on disk
// before the next starts, so a crash resumes at the step it stopped in.
func (m *Manager) register() bool {
	m.confirmRegState()
	if !m.checkMetadataValid() {
		return false
	}
	if m.reg == regInitial {
		id, err := m.getNextBrokerID()
		if err != nil {
			m.warn("get next broker id", err)
			return false
		}
		code := m.cfg.BrokerAddr + ";" + strconv.FormatInt(m.cfg.Clock.Now().UnixMilli(), 10)
		if err := m.files.writeTemp(Identity{Cluster: m.cfg.ClusterName, Broker: m.cfg.BrokerName, ID: id, CheckCode: code}); err != nil {
			m.log.Error().Err(err).Msg("create temp broker identity file")
			_ = m.files.clearTemp()
			return false
		}
		m.reg = regTempDone
	}
	if m.reg == regTempDone {
		temp, ok, err := m.files.load(true)
		if err != nil || !ok {
			m.log.Error().Err(err).Msg("temp broker identity file lost")
			m.reg = regInitial
			return false
		}
		if err := m.applyBrokerID(temp); err != nil {
			// The id went to another broker: forget it and ask again.
			m.warn("apply broker id", err)
			_ = m.files.clearTemp()
			m.reg = regInitial
			return false
		}
		if err := m.files.commit(temp); err != nil {
			m.log.Error().Err(err).Msg("create broker identity file")
			return false
		}
		m.mu.Lock()
		m.controllerID.Store(temp.ID)
		m.mu.Unlock()
		m.ha.SetLocalBrokerID(temp.ID)
		m.reg = regMetaDone
	}
	if m.reg == regMetaDone {
		if err := m.registerToController(); err != nil {
			m.warn("register broker to controller", err)
			return false
		}
		m.reg = regDone
	}
	return true
}

// confirmRegState reads the identity files: the identity file means the
// id is ours; the temp file alone means it was asked for, not applied.
func (m *Manager) confirmRegState() {
	v, ok, err := m.files.load(false)
	if err != nil {
		m.log.Error().Err(err).Msg("read broker identity file")
	}
	if ok {
		m.reg = regMetaDone
		m.mu.Lock()
		m.controllerID.Store(v.ID)
		m.mu.Unlock()
		m.ha.SetLocalBrokerID(v.ID)
		m.ident = v
		return
	}
	t, ok, err := m.files.load(true)
	if err != nil {
		m.log.Error().Err(err).Msg("read temp broker identity file")
	}
	if ok {
		m.reg = regTempDone
		m.ident = t
	}
}

// checkMetadataValid refuses files of another cluster or broker name.
func (m *Manager) checkMetadataValid() bool {
	if m.reg != regTempDone && m.reg != regMetaDone {
		return true
	}
	if m.ident.Cluster != m.cfg.ClusterName || m.ident.Broker != m.cfg.BrokerName {
		m.log.Error().Str("fileCluster", m.ident.Cluster).Str("fileBroker", m.ident.Broker).
			Str("cluster", m.cfg.ClusterName).Str("broker", m.cfg.BrokerName).
			Msg("broker identity file names another broker set: fix the config or remove the file")
		return false
	}
	return true
}

func (m *Manager) getNextBrokerID() (int64, error) {
	h := remoting.BrokerSetRequestHeader{ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName}
	resp, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerGetNextBrokerID, h.Fields(), nil))
	if err != nil {
		return 0, err
	}
	r, err := remoting.DecodeHeader[remoting.ControllerReplyHeader](resp)
	if err != nil {
		return 0, err
	}
	if r.NextBrokerID == nil {
		return 0, errors.New("no nextBrokerId in the answer")
	}
	return *r.NextBrokerID, nil
}

func (m *Manager) applyBrokerID(v Identity) error {
	id := v.ID
	h := remoting.ApplyBrokerIDRequestHeader{ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName, AppliedBrokerID: &id, RegisterCheckCode: v.CheckCode}
	_, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerApplyBrokerID, h.Fields(), nil))
	return err
}

// registerToController is 1003: the controller learns the address and
// answers the master, if one is alive, whose role this broker takes.
func (m *Manager) registerToController() error {
	id := m.ControllerID()
	h := remoting.RegisterBrokerToControllerRequestHeader{ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName,
		BrokerID: &id, BrokerAddress: m.cfg.BrokerAddr, InvokeTime: m.cfg.Clock.Now().UnixMilli()}
	resp, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerRegisterBroker, h.Fields(), nil))
	if err != nil {
		return err
	}
	r, err := remoting.DecodeHeader[remoting.ControllerReplyHeader](resp)
	if err != nil {
		return err
	}
	if r.MasterBrokerID == nil {
		return nil
	}
	var set remoting.SyncStateSet
	if len(resp.Body) > 0 {
		if set, err = remoting.DecodeSyncStateSet(resp.Body); err != nil {
			return err
		}
	}
	m.ChangeBrokerRole(r.MasterBrokerID, r.MasterAddress, r.MasterEpoch, r.SyncStateSetEpoch, set.SyncStateSet)
	return nil
}

// brokerElect is 1002 for this broker: the controller elects (this broker
// on a new set) or answers the master that exists (2011).
func (m *Manager) brokerElect() bool {
	h := remoting.ElectMasterRequestHeader{ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName,
		BrokerID: m.ControllerID(), InvokeTime: m.cfg.Clock.Now().UnixMilli()}
	resp, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerElectMaster, h.Fields(), nil), remoting.ControllerMasterStillExist)
	if err != nil {
		m.warn("elect master", err)
		return false
	}
	r, err := remoting.DecodeHeader[remoting.ElectMasterResponseHeader](resp)
	if err != nil || r.MasterAddress == "" || r.MasterBrokerID == nil {
		m.log.Warn().Err(err).Msg("no master in the broker set yet")
		return false
	}
	var set []int64
	if len(resp.Body) > 0 {
		body, err := remoting.DecodeElectMasterResponseBody(resp.Body)
		if err != nil {
			m.warn("elect master", err)
			return false
		}
		set = body.SyncStateSet
	}
	m.ChangeBrokerRole(r.MasterBrokerID, r.MasterAddress, r.MasterEpoch, r.SyncStateSetEpoch, set)
	return true
}

// syncBrokerMetadata is the 1004 task: a higher master epoch changes the
// role, a set without master asks for an election, the same epoch brings
// the master the accepted sync state set, and a controller that forgot
// the broker (2008) gets its registration again.
func (m *Manager) syncBrokerMetadata() {
	h := remoting.BrokerNameRequestHeader{BrokerName: m.cfg.BrokerName}
	resp, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerGetReplicaInfo, h.Fields(), nil))
	if err != nil {
		m.warn("get replica info", err)
		if codeOf(err) == remoting.ControllerBrokerMetadataNotExist {
			if err := m.registerToController(); err != nil {
				m.warn("register broker to controller", err)
			}
			m.sleep(afterReRegister)
		}
		return
	}
	r, err := remoting.DecodeHeader[remoting.ControllerReplyHeader](resp)
	if err != nil {
		m.warn("get replica info", err)
		return
	}
	var set remoting.SyncStateSet
	if len(resp.Body) > 0 {
		if set, err = remoting.DecodeSyncStateSet(resp.Body); err != nil {
			m.warn("get replica info", err)
			return
		}
	}
	epoch := int32(0)
	if r.MasterEpoch != nil {
		epoch = *r.MasterEpoch
	}
	m.mu.Lock()
	cur, master := m.masterEpoch, m.master
	m.mu.Unlock()
	switch {
	case epoch > cur && r.MasterAddress != "" && r.MasterBrokerID != nil:
		ssEpoch := set.SyncStateSetEpoch
		m.ChangeBrokerRole(r.MasterBrokerID, r.MasterAddress, &epoch, &ssEpoch, set.SyncStateSet)
	case epoch > cur:
		m.brokerElect()
	case epoch == cur && master:
		m.changeSyncStateSet(set.SyncStateSet, set.SyncStateSetEpoch)
	}
}

// ChangeBrokerRole applies a master the controller named (1008, or an
// answer of 1002/1003/1004), only when its epoch is higher than the one
// the broker follows.
func (m *Manager) ChangeBrokerRole(masterID *int64, masterAddr string, masterEpoch, sssEpoch *int32, sss []int64) {
	if masterID == nil || masterEpoch == nil {
		return
	}
	ssEpoch := int32(0)
	if sssEpoch != nil {
		ssEpoch = *sssEpoch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	self := m.controllerID.Load()
	if *masterEpoch <= m.masterEpoch || self == 0 {
		return
	}
	if *masterID == self {
		m.changeToMasterLocked(*masterEpoch, ssEpoch, sss)
	} else {
		m.changeToSlaveLocked(masterAddr, *masterEpoch, *masterID)
	}
}

// changeToMasterLocked: the HA service switches (truncating what no
// replica confirmed, opening the new epoch) before the broker takes
// writes; a failure leaves the epoch as it was, so the next 1004 round
// tries again.
func (m *Manager) changeToMasterLocked(epoch, sssEpoch int32, sss []int64) {
	m.log.Info().Int32("epoch", epoch).Int64("brokerControllerId", m.controllerID.Load()).Msg("changing to master")
	m.changeSyncStateSetLocked(sss, sssEpoch)
	if err := m.ha.ChangeToMaster(epoch); err != nil {
		m.log.Error().Err(err).Int32("epoch", epoch).Msg("HA service did not change to master; retried on the next metadata sync")
		return
	}
	m.masterEpoch = epoch
	if !m.master {
		m.br.BecomeMaster(epoch)
	}
	m.master, m.masterID, m.masterAddr = true, m.controllerID.Load(), m.cfg.BrokerAddr
	m.kickReport()
	m.br.RegisterNameServers()
}

func (m *Manager) changeToSlaveLocked(addr string, epoch int32, masterID int64) {
	m.log.Info().Int32("epoch", epoch).Int64("masterBrokerId", masterID).Str("masterAddr", addr).Msg("changing to slave")
	if masterID == m.masterID && !m.master {
		// The same master in a new epoch (changeToSlaveWhenMasterNotChange).
		m.masterEpoch = epoch
		m.br.RegisterNameServers()
		return
	}
	self := m.controllerID.Load()
	m.br.BecomeSlave(self, addr, epoch)
	m.master = false
	if err := m.ha.ChangeToSlave("", epoch, self); err != nil {
		m.log.Error().Err(err).Int32("epoch", epoch).Msg("HA service did not change to slave; retried on the next metadata sync")
		return
	}
	m.masterEpoch, m.masterAddr, m.masterID = epoch, addr, masterID
	m.br.RegisterNameServers()
}

func (m *Manager) changeSyncStateSet(set []int64, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changeSyncStateSetLocked(set, epoch)
}

func (m *Manager) changeSyncStateSetLocked(set []int64, epoch int32) {
	if epoch <= m.sssEpoch {
		return
	}
	set = remoting.SortedIDs(set)
	m.log.Info().Ints64("from", m.sss).Ints64("to", set).Int32("epoch", epoch).Msg("sync state set changed")
	m.sss, m.sssEpoch = set, epoch
	if slices.Equal(m.proposed, set) {
		m.proposed = nil
	}
	m.ha.SetSyncStateSet(slices.Clone(set), epoch)
}

// checkAndReport is the master's 1001: the HA service's last proposal, if
// the controller has not taken it yet.
func (m *Manager) checkAndReport() {
	m.mu.Lock()
	if !m.master || m.proposed == nil || slices.Equal(m.proposed, m.sss) {
		m.proposed = nil
		m.mu.Unlock()
		return
	}
	set, id, epoch, ssEpoch := slices.Clone(m.proposed), m.controllerID.Load(), m.masterEpoch, m.sssEpoch
	m.mu.Unlock()
	h := remoting.AlterSyncStateSetRequestHeader{BrokerName: m.cfg.BrokerName, MasterBrokerID: &id, MasterEpoch: &epoch,
		InvokeTime: m.cfg.Clock.Now().UnixMilli()}
	body := (&remoting.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: ssEpoch}).Encode()
	resp, err := m.call(m.leaderAddr(), remoting.NewRequest(remoting.ControllerAlterSyncStateSet, h.Fields(), body))
	if err != nil {
		m.warn("alter sync state set", err)
		return
	}
	got, err := remoting.DecodeSyncStateSet(resp.Body)
	if err != nil {
		m.warn("alter sync state set", err)
		return
	}
	m.changeSyncStateSet(got.SyncStateSet, got.SyncStateSetEpoch)
}

// heartbeats sends 904 to every controller every HeartbeatInterval while
// the broker is not fenced (the startup sends its own first one).
func (m *Manager) heartbeats() {
	defer m.wg.Done()
	for m.sleep(m.cfg.HeartbeatInterval) {
		if !m.fenced.Load() {
			m.sendHeartbeat()
		}
	}
}

func (m *Manager) sendHeartbeat() {
	id := m.ControllerID()
	if id == 0 {
		return
	}
	epoch, maxOff, confirm := m.ha.LastEpoch(), m.br.MaxPhyOffset(), m.ha.ConfirmOffset()
	timeout, prio := m.cfg.ControllerHeartbeatTimeout.Milliseconds(), m.cfg.ElectionPriority
	h := remoting.BrokerHeartbeatRequestHeader{ClusterName: m.cfg.ClusterName, BrokerAddr: m.cfg.BrokerAddr, BrokerName: m.cfg.BrokerName,
		BrokerID: &id, Epoch: &epoch, MaxOffset: &maxOff, ConfirmOffset: &confirm, HeartbeatTimeoutMills: &timeout, ElectionPriority: &prio}
	fields := h.Fields()
	for _, a := range m.controllerAddrs() {
		if err := m.tr.Oneway(a, remoting.NewRequest(remoting.BrokerHeartbeat, fields, nil)); err != nil {
			m.warn("controller heartbeat", err)
		}
	}
}

// ServeNotifyRoleChanged serves NOTIFY_BROKER_ROLE_CHANGED (1008,
// AdminBrokerProcessor.notifyBrokerRoleChanged).
func (m *Manager) ServeNotifyRoleChanged(req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.NotifyBrokerRoleChangedRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	set, err := remoting.DecodeSyncStateSet(req.Body)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	m.log.Info().Str("masterAddress", h.MasterAddress).Msg("notified of a broker role change")
	m.ChangeBrokerRole(h.MasterBrokerID, h.MasterAddress, h.MasterEpoch, h.SyncStateSetEpoch, set.SyncStateSet)
	return remoting.NewResponse(req, remoting.Success, "")
}

// ServeEpochCache serves GET_BROKER_EPOCH_CACHE (1007).
func (m *Manager) ServeEpochCache(req *remoting.Command) *remoting.Command {
	c := remoting.EpochEntryCache{ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName, BrokerID: m.br.BrokerID(),
		EpochList: m.ha.EpochEntries(), MaxOffset: m.br.MaxPhyOffset()}
	if c.EpochList == nil {
		c.EpochList = []remoting.EpochEntry{}
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(&c)
	return resp
}

// Service is the whole AutoSwitch HA service as the broker drives it in
// controller mode (store/ha/autoswitch.Service behind the broker's
// adapter): the manager's HA, plus its life cycle, the slave's master
// address and the SYNC_MASTER wait.
type Service interface {
	HA
	Start() error
	Close()
	// Addr is the HA listen address (registered as haServerAddr).
	Addr() net.Addr
	// SetMasterHAAddr: a slave learns it from the name server's answer.
	SetMasterHAAddr(addr string)
	SyncStateSet() ([]int64, int32)
	// WaitReplicated calls fn once the sync state set (or inSyncReplicas
	// members) acked up to end, or with false after the slave timeout.
	WaitReplicated(end int64, fn func(ok bool))
	IsSlaveOK(end int64) bool
}
