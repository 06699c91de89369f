package replicas

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// fakeController answers the controller codes for one broker set the way
// the stock controller does, with switches to fail what a test needs.
type fakeController struct {
	mu        sync.Mutex
	leader    string
	nextID    int64
	applied   map[int64]string // id -> check code
	addrs     map[int64]string
	masterID  int64
	epoch     int32
	sss       []int64
	sssEpoch  int32
	fail      map[int32]int32 // code -> answer code, while set
	forget    bool            // 1004 answers 2008 once
	calls     []int32
	heartbeat []remoting.BrokerHeartbeatRequestHeader
	down      bool // every call fails (connection refused)
}

func newFakeController() *fakeController {
	return &fakeController{leader: "ctl:9878", nextID: 1, applied: map[int64]string{}, addrs: map[int64]string{}, fail: map[int32]int32{}}
}

func (c *fakeController) InvokeTimeout(addr string, req *remoting.Command, _ time.Duration) (*remoting.Command, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return nil, errors.New("connection refused")
	}
	c.calls = append(c.calls, req.Code)
	if code, ok := c.fail[req.Code]; ok {
		return remoting.NewResponse(req, code, "injected"), nil
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	ext := req.ExtFields
	switch req.Code {
	case remoting.ControllerGetMetadataInfo:
		(&remoting.GetMetaDataResponseHeader{ControllerLeaderAddress: c.leader, IsLeader: true}).Encode(resp)
	case remoting.ControllerGetNextBrokerID:
		id := c.nextID
		(&remoting.ControllerReplyHeader{NextBrokerID: &id}).Encode(resp)
	case remoting.ControllerApplyBrokerID:
		var id int64
		fmt.Sscan(ext["appliedBrokerId"], &id)
		if code, ok := c.applied[id]; ok && code != ext["registerCheckCode"] || id != c.nextID && !ok {
			return remoting.NewResponse(req, remoting.ControllerBrokerIDInvalid, "taken"), nil
		}
		if _, ok := c.applied[id]; !ok {
			c.applied[id] = ext["registerCheckCode"]
			c.nextID++
		}
	case remoting.ControllerRegisterBroker:
		var id int64
		fmt.Sscan(ext["brokerId"], &id)
		if _, ok := c.applied[id]; !ok {
			return remoting.NewResponse(req, remoting.ControllerBrokerMetadataNotExist, "unknown"), nil
		}
		c.addrs[id] = ext["brokerAddress"]
		c.masterHeader(resp)
	case remoting.ControllerElectMaster:
		var id int64
		fmt.Sscan(ext["brokerId"], &id)
		if c.masterID != 0 {
			resp.Code = remoting.ControllerMasterStillExist
		} else {
			c.masterID, c.epoch, c.sss = id, c.epoch+1, []int64{id}
			c.sssEpoch++
		}
		c.masterHeader(resp)
		resp.Body = (&remoting.ElectMasterResponseBody{SyncStateSet: c.sss}).Encode()
	case remoting.ControllerGetReplicaInfo:
		if c.forget {
			c.forget = false
			return remoting.NewResponse(req, remoting.ControllerBrokerMetadataNotExist, "forgot"), nil
		}
		c.masterHeader(resp)
	case remoting.ControllerAlterSyncStateSet:
		set, err := remoting.DecodeSyncStateSet(req.Body)
		if err != nil {
			return remoting.NewResponse(req, remoting.ControllerInvalidRequest, err.Error()), nil
		}
		if ext["masterEpoch"] != fmt.Sprint(c.epoch) {
			return remoting.NewResponse(req, remoting.ControllerFencedMasterEpoch, "fenced"), nil
		}
		c.sss, c.sssEpoch = set.SyncStateSet, c.sssEpoch+1
		e := c.sssEpoch
		(&remoting.ControllerReplyHeader{NewSyncStateSetEpoch: &e}).Encode(resp)
		resp.Body = (&remoting.SyncStateSet{SyncStateSet: c.sss, SyncStateSetEpoch: c.sssEpoch}).Encode()
	default:
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, ""), nil
	}
	return resp, nil
}

// masterHeader writes the master fields when there is a master, and the
// sync state set body.
func (c *fakeController) masterHeader(resp *remoting.Command) {
	h := remoting.ControllerReplyHeader{}
	if c.masterID != 0 {
		id, e, se := c.masterID, c.epoch, c.sssEpoch
		h.MasterBrokerID, h.MasterAddress, h.MasterEpoch, h.SyncStateSetEpoch = &id, c.addrs[id], &e, &se
	} else {
		e := c.epoch
		h.MasterEpoch = &e
	}
	h.Encode(resp)
	if resp.Body == nil {
		resp.Body = (&remoting.SyncStateSet{SyncStateSet: c.sss, SyncStateSetEpoch: c.sssEpoch}).Encode()
	}
}

func (c *fakeController) Oneway(addr string, req *remoting.Command) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errors.New("connection refused")
	}
	if req.Code == remoting.BrokerHeartbeat {
		h, err := remoting.DecodeHeader[remoting.BrokerHeartbeatRequestHeader](req)
		if err != nil {
			return err
		}
		c.heartbeat = append(c.heartbeat, h)
	}
	return nil
}

// elect makes id the master in a new epoch, as the controller does after
// the old master's heartbeats stopped.
func (c *fakeController) elect(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.masterID, c.epoch, c.sss = id, c.epoch+1, []int64{id}
	c.sssEpoch++
}

// events is the ordered record of what the manager asked of the HA
// service and the broker.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(f string, a ...any) {
	e.mu.Lock()
	e.log = append(e.log, fmt.Sprintf(f, a...))
	e.mu.Unlock()
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

type fakeHA struct {
	ev        *events
	lastEpoch int32
	refuse    bool
	// hold, when set, is called at the start of ChangeToMaster (a switch
	// that takes its time: truncation, the dispatch wait).
	hold func()
}

func (h *fakeHA) ChangeToMaster(epoch int32) error {
	if h.hold != nil {
		h.hold()
	}
	if h.refuse {
		return errors.New("refused")
	}
	h.ev.add("ha.master %d", epoch)
	h.lastEpoch = epoch
	return nil
}

func (h *fakeHA) ChangeToSlave(addr string, epoch int32, self int64) error {
	h.ev.add("ha.slave %d self=%d", epoch, self)
	return nil
}
func (h *fakeHA) SetSyncStateSet(ids []int64, epoch int32) { h.ev.add("ha.sss %v %d", ids, epoch) }
func (h *fakeHA) ConfirmOffset() int64                     { return 100 }
func (h *fakeHA) SetLocalBrokerID(int64)                   {}
func (h *fakeHA) LastEpoch() int32                         { return h.lastEpoch }
func (h *fakeHA) EpochEntries() []remoting.EpochEntry {
	return []remoting.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 1<<63 - 1}}
}

type fakeBroker struct {
	ev *events
	id int64
	// onFenced, when set, is called by SetFenced before it records.
	onFenced func(bool)
}

func (b *fakeBroker) MaxPhyOffset() int64 { return 200 }
func (b *fakeBroker) BecomeMaster(epoch int32) {
	b.id = 0
	b.ev.add("br.master %d", epoch)
}
func (b *fakeBroker) BecomeSlave(id int64, addr string, epoch int32) {
	b.id = id
	b.ev.add("br.slave %d %s %d", id, addr, epoch)
}
func (b *fakeBroker) SetFenced(f bool) {
	if b.onFenced != nil {
		b.onFenced(f)
	}
	b.ev.add("br.fenced %v", f)
}
func (b *fakeBroker) RegisterNameServers() { b.ev.add("br.register") }
func (b *fakeBroker) BrokerID() int64      { return b.id }

type rig struct {
	ctl  *fakeController
	ev   *events
	ha   *fakeHA
	br   *fakeBroker
	m    *Manager
	clk  *clock.Manual
	dir  string
	addr string
}

func newRig(t *testing.T, ctl *fakeController, dir, addr string) *rig {
	t.Helper()
	ev := &events{}
	r := &rig{ctl: ctl, ev: ev, ha: &fakeHA{ev: ev}, br: &fakeBroker{ev: ev, id: -1}, dir: dir, addr: addr,
		clk: clock.NewManual(time.Unix(1_700_000_000, 0))}
	r.m = New(Config{
		ClusterName: "c", BrokerName: "b", BrokerAddr: addr,
		ControllerAddrs:   func() []string { return []string{"ctl:9878"} },
		IdentityPath:      filepath.Join(dir, "brokerIdentity"),
		HeartbeatInterval: time.Second, SyncBrokerMetadataPeriod: 5 * time.Second, SyncControllerMetadataPeriod: 10 * time.Second,
		CheckSyncStateSetPeriod: 5 * time.Second, ControllerHeartbeatTimeout: 10 * time.Second, ElectionPriority: 7,
		Clock: r.clk, Logger: zerolog.Nop(), Jitter: func(time.Duration) time.Duration { return 0 },
	}, ctl, r.ha, r.br)
	r.m.refreshAddrs()
	return r
}

// leader is the first startup step, for tests that call register alone.
func (r *rig) leader(t *testing.T) *rig {
	t.Helper()
	if !r.m.updateControllerMetadata() {
		t.Fatal("no controller leader")
	}
	return r
}

// startup runs startBasic once, synchronously.
func (r *rig) startup(t *testing.T) bool {
	t.Helper()
	return r.m.startBasic()
}

// started is a rig at addr whose startup reached RUNNING.
func started(t *testing.T, ctl *fakeController, addr string) *rig {
	t.Helper()
	r := newRig(t, ctl, t.TempDir(), addr)
	if !r.startup(t) {
		t.Fatalf("%s: startup did not reach RUNNING", addr)
	}
	return r
}

// startedPair is two brokers of the set, started in turn: a (id 1, the
// master) and b (id 2, its slave).
func startedPair(t *testing.T, ctl *fakeController) (a, b *rig) {
	t.Helper()
	return started(t, ctl, "10.0.0.1:10911"), started(t, ctl, "10.0.0.2:10911")
}

// withFiles is a rig at addr over a directory that holds the identity
// files named (name, content, name, content...), as a crash left them.
func withFiles(t *testing.T, ctl *fakeController, addr string, files ...string) *rig {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return newRig(t, ctl, dir, addr)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

func TestFirstBrokerRegistersElectsItselfAndBecomesMaster(t *testing.T) {
	ctl := newFakeController()
	r := started(t, ctl, "10.0.0.1:10911")
	if got := readFile(t, filepath.Join(r.dir, "brokerIdentity")); got != "c#b#1" {
		t.Fatalf("identity file %q, want c#b#1", got)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "brokerIdentity-temp")); !os.IsNotExist(err) {
		t.Fatalf("temp identity file left behind: %v", err)
	}
	ev := r.ev.all()
	want := []string{"br.fenced true", "ha.sss [1] 1", "ha.master 1", "br.master 1", "br.register", "br.fenced false", "br.register"}
	if !slices.Equal(ev, want) {
		t.Fatalf("events %q\nwant %q", ev, want)
	}
	if ro := r.m.Role(); !ro.Master || ro.MasterEpoch != 1 || ro.MasterID != 1 {
		t.Fatalf("role %+v", ro)
	}
	// The heartbeat the startup sends carries the id, epoch, offsets and
	// priority.
	if len(ctl.heartbeat) != 1 {
		t.Fatalf("%d heartbeats, want 1", len(ctl.heartbeat))
	}
	h := ctl.heartbeat[0]
	if *h.BrokerID != 1 || *h.MaxOffset != 200 || *h.ConfirmOffset != 100 || *h.ElectionPriority != 7 || *h.HeartbeatTimeoutMills != 10000 {
		t.Fatalf("heartbeat %+v", h)
	}
}

func TestSecondBrokerBecomesSlaveOfTheMaster(t *testing.T) {
	ctl := newFakeController()
	_, b := startedPair(t, ctl)
	ev := b.ev.all()
	want := []string{"br.fenced true", "br.slave 2 10.0.0.1:10911 1", "ha.slave 1 self=2", "br.register", "br.fenced false", "br.register"}
	if !slices.Equal(ev, want) {
		t.Fatalf("events %q\nwant %q", ev, want)
	}
	if slices.Contains(ctl.calls, remoting.ControllerElectMaster) && strings.Count(fmt.Sprint(ctl.calls), "1002") > 1 {
		t.Fatalf("the slave asked for an election while a master exists: %v", ctl.calls)
	}
}

// A crash after GET_NEXT_BROKER_ID wrote the temp file: the restart
// applies the id it asked for (no new 1012), then writes the identity.
func TestRegistrationResumesFromTheTempFile(t *testing.T) {
	ctl := newFakeController()
	r := withFiles(t, ctl, "10.0.0.1:10911", "brokerIdentity-temp", "c#b#1#10.0.0.1:10911;1700000000000")
	if !r.startup(t) {
		t.Fatal("startup failed")
	}
	if slices.Contains(ctl.calls, remoting.ControllerGetNextBrokerID) {
		t.Fatalf("asked for a new id though the temp file had one: %v", ctl.calls)
	}
	if ctl.applied[1] != "10.0.0.1:10911;1700000000000" {
		t.Fatalf("applied %v", ctl.applied)
	}
	if got := readFile(t, filepath.Join(r.dir, "brokerIdentity")); got != "c#b#1" {
		t.Fatalf("identity %q", got)
	}
}

// The temp file's id went to another broker meanwhile: 1013 fails, the temp
// file goes, and the next try asks for a new id.
func TestRegistrationStartsOverWhenTheTempIDWasTaken(t *testing.T) {
	ctl := newFakeController()
	ctl.applied[1] = "other;1"
	ctl.nextID = 2
	r := withFiles(t, ctl, "10.0.0.1:10911", "brokerIdentity-temp", "c#b#1#10.0.0.1:10911;5").leader(t)
	if r.m.register() {
		t.Fatal("first try succeeded with a taken id")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "brokerIdentity-temp")); !os.IsNotExist(err) {
		t.Fatal("temp file kept after the refused apply")
	}
	if !r.m.register() {
		t.Fatal("second try failed")
	}
	if got := readFile(t, filepath.Join(r.dir, "brokerIdentity")); got != "c#b#2" {
		t.Fatalf("identity %q, want c#b#2", got)
	}
}

// A crash after the identity file was written (with or without the temp
// file still there): the restart registers with that id and asks for no
// id.
func TestRegistrationResumesFromTheIdentityFile(t *testing.T) {
	ctl := newFakeController()
	ctl.applied[3] = "x"
	ctl.nextID = 4
	r := withFiles(t, ctl, "10.0.0.3:10911", "brokerIdentity", "c#b#3", "brokerIdentity-temp", "c#b#3#x").leader(t)
	if !r.m.register() {
		t.Fatal("register failed")
	}
	if slices.Contains(ctl.calls, remoting.ControllerGetNextBrokerID) || slices.Contains(ctl.calls, remoting.ControllerApplyBrokerID) {
		t.Fatalf("calls %v", ctl.calls)
	}
	if r.m.ControllerID() != 3 || ctl.addrs[3] != "10.0.0.3:10911" {
		t.Fatalf("id %d addrs %v", r.m.ControllerID(), ctl.addrs)
	}
}

func TestIdentityOfAnotherBrokerSetBlocksRegistration(t *testing.T) {
	ctl := newFakeController()
	r := withFiles(t, ctl, "10.0.0.3:10911", "brokerIdentity", "c#other#3").leader(t)
	ctl.calls = nil
	if r.m.register() {
		t.Fatal("registered with another broker set's identity")
	}
	if len(ctl.calls) != 0 {
		t.Fatalf("calls %v", ctl.calls)
	}
}

// A failover: the controller elects the slave in a new epoch; the 1004
// round changes it to master (HA first), and the old master, back, becomes
// a slave of the new epoch. An older or equal epoch changes nothing.
func TestFailoverByEpoch(t *testing.T) {
	ctl := newFakeController()
	a, b := startedPair(t, ctl)
	ctl.elect(2)
	n := len(b.ev.all())
	b.m.syncBrokerMetadata()
	ev := b.ev.all()[n:]
	want := []string{"ha.sss [2] 2", "ha.master 2", "br.master 2", "br.register"}
	if !slices.Equal(ev, want) {
		t.Fatalf("b events %q\nwant %q", ev, want)
	}
	// A stale notification (epoch 1, a as master) is ignored.
	one, e1, se := int64(1), int32(1), int32(1)
	b.m.ChangeBrokerRole(&one, "10.0.0.1:10911", &e1, &se, []int64{1})
	if !b.m.Role().Master {
		t.Fatal("stale epoch changed the role")
	}
	n = len(a.ev.all())
	a.m.syncBrokerMetadata()
	ev = a.ev.all()[n:]
	want = []string{"br.slave 1 10.0.0.2:10911 2", "ha.slave 2 self=1", "br.register"}
	if !slices.Equal(ev, want) {
		t.Fatalf("a events %q\nwant %q", ev, want)
	}
	// The same epoch again: nothing.
	n = len(a.ev.all())
	a.m.syncBrokerMetadata()
	if got := a.ev.all()[n:]; len(got) != 0 {
		t.Fatalf("same epoch changed something: %q", got)
	}
}

// The HA service refuses the switch: the epoch stays, and the next round
// tries again.
func TestChangeToMasterRetriedWhenHARefuses(t *testing.T) {
	ctl := newFakeController()
	_, b := startedPair(t, ctl)
	ctl.elect(2)
	b.ha.refuse = true
	b.m.syncBrokerMetadata()
	if ro := b.m.Role(); ro.Master || ro.MasterEpoch != 1 {
		t.Fatalf("role after a refused switch %+v", ro)
	}
	b.ha.refuse = false
	b.m.syncBrokerMetadata()
	if ro := b.m.Role(); !ro.Master || ro.MasterEpoch != 2 {
		t.Fatalf("role after the retry %+v", ro)
	}
}

func TestMetadataNotExistReRegisters(t *testing.T) {
	ctl := newFakeController()
	a := started(t, ctl, "10.0.0.1:10911")
	ctl.mu.Lock()
	ctl.forget = true
	ctl.calls = nil
	ctl.mu.Unlock()
	done := make(chan struct{})
	go func() { a.m.syncBrokerMetadata(); close(done) }()
	// The re-register is followed by a 2 s pause of the clock.
	for !a.clk.HasTimerAt(a.clk.Now().Add(afterReRegister)) {
		time.Sleep(time.Millisecond)
	}
	a.clk.Advance(afterReRegister)
	<-done
	if want := []int32{remoting.ControllerGetReplicaInfo, remoting.ControllerRegisterBroker}; !slices.Equal(ctl.calls, want) {
		t.Fatalf("calls %v, want %v", ctl.calls, want)
	}
}

// No master (the controller lost it with nobody in sync): the 1004 round
// sees a higher epoch without master and asks for an election.
func TestNoMasterAsksForElection(t *testing.T) {
	ctl := newFakeController()
	_, b := startedPair(t, ctl)
	ctl.mu.Lock()
	ctl.masterID, ctl.epoch = 0, ctl.epoch+1
	ctl.calls = nil
	ctl.mu.Unlock()
	b.m.syncBrokerMetadata()
	if want := []int32{remoting.ControllerGetReplicaInfo, remoting.ControllerElectMaster}; !slices.Equal(ctl.calls, want) {
		t.Fatalf("calls %v, want %v", ctl.calls, want)
	}
	if ro := b.m.Role(); !ro.Master || ro.MasterEpoch != 3 {
		t.Fatalf("b role %+v", ro)
	}
}

// The HA service's proposals go to the controller (1001) with the
// master's epoch; the accepted set reaches the HA service; a refused one
// is retried on the check period.
func TestSyncStateSetReport(t *testing.T) {
	ctl := newFakeController()
	a := started(t, ctl, "10.0.0.1:10911")
	ctl.mu.Lock()
	ctl.fail[remoting.ControllerAlterSyncStateSet] = remoting.ControllerAlterSyncStateSetFailed
	ctl.mu.Unlock()
	a.m.OnSyncStateSetChange([]int64{2})
	a.m.checkAndReport()
	if ro := a.m.Role(); !slices.Equal(ro.SyncStateSet, []int64{1}) {
		t.Fatalf("set after a refused report %v", ro.SyncStateSet)
	}
	ctl.mu.Lock()
	delete(ctl.fail, remoting.ControllerAlterSyncStateSet)
	ctl.mu.Unlock()
	a.m.checkAndReport()
	if ro := a.m.Role(); !slices.Equal(ro.SyncStateSet, []int64{1, 2}) || ro.SyncStateSetEpoch != 2 {
		t.Fatalf("set after the retry %v epoch %d", ro.SyncStateSet, ro.SyncStateSetEpoch)
	}
	if ev := a.ev.all(); ev[len(ev)-1] != "ha.sss [1 2] 2" {
		t.Fatalf("HA service not told: %q", ev)
	}
	// Nothing proposed: no call.
	ctl.mu.Lock()
	ctl.calls = nil
	ctl.mu.Unlock()
	a.m.checkAndReport()
	if len(ctl.calls) != 0 {
		t.Fatalf("calls %v", ctl.calls)
	}
}

// NOTIFY_BROKER_ROLE_CHANGED applies a higher epoch; GET_BROKER_EPOCH_CACHE
// answers the HA service's table.
func TestServeNotifyAndEpochCache(t *testing.T) {
	ctl := newFakeController()
	_, b := startedPair(t, ctl)
	id, e, se := int64(2), int32(5), int32(4)
	h := remoting.NotifyBrokerRoleChangedRequestHeader{MasterBrokerID: &id, MasterAddress: "10.0.0.2:10911", MasterEpoch: &e, SyncStateSetEpoch: &se}
	req := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, h.Fields(), (&remoting.SyncStateSet{SyncStateSet: []int64{2}, SyncStateSetEpoch: 4}).Encode())
	if resp := b.m.ServeNotifyRoleChanged(req); resp.Code != remoting.Success {
		t.Fatalf("notify answered %d %s", resp.Code, resp.Remark)
	}
	if ro := b.m.Role(); !ro.Master || ro.MasterEpoch != 5 || !slices.Equal(ro.SyncStateSet, []int64{2}) {
		t.Fatalf("role %+v", ro)
	}
	bad := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, h.Fields(), []byte("{"))
	if resp := b.m.ServeNotifyRoleChanged(bad); resp.Code != remoting.SystemError {
		t.Fatalf("bad body answered %d", resp.Code)
	}
	resp := b.m.ServeEpochCache(remoting.NewRequest(remoting.GetBrokerEpochCache, nil, nil))
	if resp.Code != remoting.Success || !strings.Contains(string(resp.Body), `"epochList":[{"epoch":1,"startOffset":0,"endOffset":9223372036854775807}]`) ||
		!strings.Contains(string(resp.Body), `"maxOffset":200`) || !strings.Contains(string(resp.Body), `"brokerId":0`) {
		t.Fatalf("epoch cache %d %s", resp.Code, resp.Body)
	}
}

// Start with the controller down: the startup retries every 5 s of the
// clock until the controller answers, then runs; Close stops it.
func TestStartRetriesUntilTheControllerAnswersAndCloseStops(t *testing.T) {
	ctl := newFakeController()
	ctl.down = true
	r := newRig(t, ctl, t.TempDir(), "10.0.0.1:10911")
	r.m.Start()
	deadline := time.Now().Add(10 * time.Second)
	for r.m.State() != StateRunning {
		if time.Now().After(deadline) {
			t.Fatalf("not running; state %d", r.m.State())
		}
		if r.clk.Pending() >= 2 {
			if r.clk.Now().Sub(time.Unix(1_700_000_000, 0)) > 20*time.Second {
				ctl.mu.Lock()
				ctl.down = false
				ctl.mu.Unlock()
			}
			r.clk.Advance(500 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
	if r.clk.Now().Sub(time.Unix(1_700_000_000, 0)) < 20*time.Second {
		t.Fatal("running before the controller answered")
	}
	// Heartbeats follow on the clock once running.
	ctl.mu.Lock()
	n := len(ctl.heartbeat)
	ctl.mu.Unlock()
	for i := 0; i < 50; i++ {
		r.clk.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	ctl.mu.Lock()
	got := len(ctl.heartbeat)
	ctl.mu.Unlock()
	if got <= n {
		t.Fatalf("no heartbeat after running: %d then %d", n, got)
	}
	r.m.Close()
	if r.m.State() != StateShutdown {
		t.Fatalf("state %d after Close", r.m.State())
	}
}

func FuzzParseIdentity(f *testing.F) {
	f.Add([]byte("c#b#1"), false)
	f.Add([]byte("c#b#1#1.2.3.4:5;6"), true)
	f.Add([]byte("##"), false)
	f.Fuzz(func(t *testing.T, b []byte, temp bool) {
		v, err := ParseIdentity(b, temp)
		if err != nil {
			return
		}
		w, err := ParseIdentity(v.Format(temp), temp)
		if err != nil || w.Cluster != v.Cluster || w.Broker != v.Broker || w.ID != v.ID || (temp && w.CheckCode != v.CheckCode) {
			if !strings.Contains(v.Cluster+v.Broker+v.CheckCode, "#") {
				t.Fatalf("round trip of %q: %+v -> %+v %v", b, v, w, err)
			}
		}
	})
}
