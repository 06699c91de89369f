package controller

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// set builds a state with broker set "a" of ids 1..n, applied as events.
func setOf(n int64) *state {
	st := newState()
	for id := int64(1); id <= n; id++ {
		st.apply(event{Type: evApplyBrokerID, Cluster: "c", BrokerName: "a", BrokerID: id, Addr: "h:" + string(rune('0'+id)), CheckCode: "x"})
	}
	return st
}

func mustApply(t *testing.T, st *state, r result) result {
	t.Helper()
	if r.code != remoting.Success {
		t.Fatalf("code %d %q", r.code, r.remark)
	}
	for _, e := range r.events {
		st.apply(e)
	}
	return r
}

func liveOf(c clock.Clock, beats map[int64][3]int64) *heartbeats {
	h := newHeartbeats(c)
	for id, b := range beats {
		epoch, off, prio := int32(b[0]), b[1], int32(b[2])
		h.heartbeat("c", "a", "h", id, nil, 0, &epoch, &off, nil, &prio)
	}
	return h
}

func TestElectPolicyOrder(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	for _, c := range []struct {
		name  string
		beats map[int64][3]int64 // id -> epoch, max offset, priority
		want  int64
	}{
		{"higher epoch wins", map[int64][3]int64{2: {1, 900, 1}, 3: {2, 100, 9}}, 3},
		{"then larger offset", map[int64][3]int64{2: {2, 100, 1}, 3: {2, 300, 9}}, 3},
		{"offsets 4 GiB apart compare as numbers", map[int64][3]int64{2: {2, 5 << 30, 1}, 3: {2, 1 << 30, 1}}, 2},
		{"then lower priority", map[int64][3]int64{2: {2, 100, 5}, 3: {2, 100, 1}}, 3},
		{"ties to the lower id", map[int64][3]int64{2: {2, 100, 1}, 3: {2, 100, 1}}, 2},
	} {
		st := setOf(3)
		live := liveOf(clk, c.beats)
		// Master 1 of epoch 1, in sync with 2 and 3, then gone.
		st.Syncs["a"].Master, st.Syncs["a"].MasterEpoch, st.Syncs["a"].SyncStateSet = ptr(int64(1)), 1, []int64{1, 2, 3}
		r := mustApply(t, st, st.electMaster(&remoting.ElectMasterRequestHeader{BrokerName: "a", BrokerID: -1}, live, false))
		if got := *st.Syncs["a"].Master; got != c.want || st.Syncs["a"].MasterEpoch != 2 {
			t.Errorf("%s: elected %d at epoch %d, want %d", c.name, got, st.Syncs["a"].MasterEpoch, c.want)
		}
		if h := r.header.(*remoting.ElectMasterResponseHeader); *h.MasterEpoch != 2 || *h.SyncStateSetEpoch != 1 {
			t.Errorf("%s: answer %+v", c.name, h)
		}
	}
}

func TestElectOutsideSyncStateSet(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	live := liveOf(clk, map[int64][3]int64{3: {1, 100, 1}})
	for _, unclean := range []bool{false, true} {
		st := setOf(3)
		st.Syncs["a"].Master, st.Syncs["a"].MasterEpoch, st.Syncs["a"].SyncStateSet = ptr(int64(1)), 1, []int64{1, 2}
		r := st.electMaster(&remoting.ElectMasterRequestHeader{BrokerName: "a", BrokerID: -1}, live, unclean)
		if !unclean {
			// Only 3 is alive and it is not in sync: the controller's own
			// election records the master gone (2004), a broker's fails (2012).
			if r.code != remoting.ControllerMasterNotAvailable || len(r.events) != 1 {
				t.Fatalf("clean: %d %q", r.code, r.remark)
			}
			mustApplyAny(st, r)
			if s := st.Syncs["a"]; s.Master != nil || s.MasterEpoch != 2 || len(s.SyncStateSet) != 2 {
				t.Fatalf("after a failed election: %+v", s)
			}
			if r := st.electMaster(&remoting.ElectMasterRequestHeader{BrokerName: "a", BrokerID: 2}, live, false); r.code != remoting.ControllerElectMasterFailed || len(r.events) != 0 {
				t.Fatalf("broker-asked failed election: %d", r.code)
			}
			continue
		}
		mustApply(t, st, r)
		if s := st.Syncs["a"]; *s.Master != 3 || s.MasterEpoch != 2 {
			t.Fatalf("unclean: %+v", s)
		}
	}
}

func mustApplyAny(st *state, r result) {
	for _, e := range r.events {
		st.apply(e)
	}
}

func TestApplyBrokerIDAndRegister(t *testing.T) {
	st := newState()
	if r := st.applyBrokerID(&remoting.ApplyBrokerIDRequestHeader{BrokerName: "a", AppliedBrokerID: ptr(int64(2)), RegisterCheckCode: "h:2;1"}); r.code != remoting.ControllerBrokerIDInvalid {
		t.Fatalf("first id 2: %d", r.code)
	}
	mustApply(t, st, st.applyBrokerID(&remoting.ApplyBrokerIDRequestHeader{ClusterName: "c", BrokerName: "a", AppliedBrokerID: ptr(int64(1)), RegisterCheckCode: "h:1;1"}))
	// The same broker again (same check code) is granted; another is not.
	mustApply(t, st, st.applyBrokerID(&remoting.ApplyBrokerIDRequestHeader{ClusterName: "c", BrokerName: "a", AppliedBrokerID: ptr(int64(1)), RegisterCheckCode: "h:1;1"}))
	if r := st.applyBrokerID(&remoting.ApplyBrokerIDRequestHeader{ClusterName: "c", BrokerName: "a", AppliedBrokerID: ptr(int64(1)), RegisterCheckCode: "h:9;1"}); r.code != remoting.ControllerBrokerIDInvalid {
		t.Fatalf("taken id: %d", r.code)
	}
	if n := *st.getNextBrokerID(&remoting.BrokerSetRequestHeader{BrokerName: "a"}).header.(*remoting.ControllerReplyHeader).NextBrokerID; n != 2 {
		t.Fatalf("next id %d", n)
	}
	live := newHeartbeats(clock.NewManual(time.Unix(0, 0)))
	r := mustApply(t, st, st.registerBroker(&remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: "a", BrokerID: ptr(int64(1)), BrokerAddress: "h:new"}, live))
	if len(r.events) != 1 || st.Replicas["a"].Brokers[1].Addr != "h:new" {
		t.Fatalf("address change: %+v", st.Replicas["a"])
	}
	if r := st.registerBroker(&remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: "a", BrokerID: ptr(int64(7))}, live); r.code != remoting.ControllerBrokerNeedToBeRegistered {
		t.Fatalf("unknown id: %d", r.code)
	}
	// A dead master is not named.
	st.Syncs["a"].Master, st.Syncs["a"].MasterEpoch = ptr(int64(1)), 1
	if h := st.registerBroker(&remoting.RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: "a", BrokerID: ptr(int64(1)), BrokerAddress: "h:new"}, live).header.(*remoting.ControllerReplyHeader); h.MasterBrokerID != nil {
		t.Fatalf("dead master named: %+v", h)
	}
}

func TestCleanBrokerData(t *testing.T) {
	live := newHeartbeats(clock.NewManual(time.Unix(0, 0)))
	st := setOf(3)
	st.Syncs["a"].Master, st.Syncs["a"].SyncStateSet = ptr(int64(1)), []int64{1, 2}
	if r := st.cleanBrokerData(&remoting.CleanControllerBrokerDataRequestHeader{BrokerName: "a"}, live); r.code != remoting.ControllerInvalidCleanBrokerMetadata {
		t.Fatalf("set with a master cleaned: %d", r.code)
	}
	if r := st.cleanBrokerData(&remoting.CleanControllerBrokerDataRequestHeader{BrokerName: "a", BrokerControllerIDsToClean: "1;x"}, live); r.code != remoting.ControllerInvalidCleanBrokerMetadata {
		t.Fatalf("bad id list: %d", r.code)
	}
	mustApply(t, st, st.cleanBrokerData(&remoting.CleanControllerBrokerDataRequestHeader{BrokerName: "a", BrokerControllerIDsToClean: "2;3;"}, live))
	if r := st.Replicas["a"]; len(r.Brokers) != 1 || len(st.Syncs["a"].SyncStateSet) != 1 {
		t.Fatalf("after cleaning 2 and 3: %+v %+v", r, st.Syncs["a"])
	}
	mustApply(t, st, st.cleanBrokerData(&remoting.CleanControllerBrokerDataRequestHeader{BrokerName: "a", IsCleanLivingBroker: true}, live))
	if st.contains("a") {
		t.Fatal("set a survived a whole clean")
	}
	if r := st.cleanBrokerData(&remoting.CleanControllerBrokerDataRequestHeader{BrokerName: "a", IsCleanLivingBroker: true}, live); r.code != remoting.ControllerInvalidCleanBrokerMetadata {
		t.Fatalf("unknown set: %d", r.code)
	}
}

func TestHeartbeatExpiry(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	h := newHeartbeats(clk)
	h.heartbeat("c", "a", "h:1", 1, ptr(int64(3000)), 7, nil, nil, nil, nil)
	h.heartbeat("c", "a", "h:2", 2, nil, 8, nil, nil, nil, nil) // default 10 s
	clk.Advance(3 * time.Second)
	if !h.alive("c", "a", 1) {
		t.Fatal("dead at its timeout")
	}
	clk.Advance(time.Millisecond)
	if got := h.expire(); len(got) != 1 || got[0].BrokerID != 1 || got[0].ConnID != 7 {
		t.Fatalf("expired %+v", got)
	}
	if got := h.connClosed(8); len(got) != 1 || h.alive("c", "a", 2) {
		t.Fatalf("conn closed: %+v", got)
	}
}
