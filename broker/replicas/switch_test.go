package replicas

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A switch to master takes as long as the HA service's ChangeToMaster
// (truncation, the dispatch wait: up to 30 s), and the manager holds its
// lock meanwhile. The heartbeats to the controllers must not wait for it:
// a controller that hears nothing for controllerHeartBeatTimeoutMills
// (10 s) takes the new master for dead and elects again.
func TestHeartbeatsGoOnDuringARoleSwitch(t *testing.T) {
	ctl := newFakeController()
	_, b := startedPair(t, ctl)
	entered, release := make(chan struct{}), make(chan struct{})
	b.ha.hold = func() { close(entered); <-release }
	id, e := int64(2), int32(2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.m.ChangeBrokerRole(&id, "10.0.0.2:10911", &e, &e, []int64{2})
	}()
	<-entered
	ctl.mu.Lock()
	n := len(ctl.heartbeat)
	ctl.mu.Unlock()
	sent := make(chan struct{})
	go func() {
		b.m.sendHeartbeat()
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		close(release)
		<-done
		t.Fatal("a heartbeat waited for the HA service's switch to master")
	}
	close(release)
	<-done
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if len(ctl.heartbeat) != n+1 || *ctl.heartbeat[n].BrokerID != 2 {
		t.Fatalf("%d heartbeats after %d, last %+v", len(ctl.heartbeat), n, ctl.heartbeat[len(ctl.heartbeat)-1])
	}
	if !b.m.Role().Master {
		t.Fatal("not master after the switch")
	}
}

// The broker's SetFenced(false) at the end of the startup and a role
// change (BecomeMaster, BecomeSlave; a NOTIFY_BROKER_ROLE_CHANGED runs on
// a request goroutine) each read one of the broker's flags and set the
// store's role from it: interleaved, a slave's store is left taking puts
// (two writers) or a master's refusing them. The manager runs them one at
// a time: a role change that arrives while SetFenced runs waits for it.
func TestUnfenceAndRoleChangeDoNotInterleave(t *testing.T) {
	ctl := newFakeController()
	started(t, ctl, "10.0.0.1:10911")
	b := newRig(t, ctl, t.TempDir(), "10.0.0.2:10911")
	changed := make(chan struct{})
	b.br.onFenced = func(f bool) {
		if f {
			return
		}
		b.br.onFenced = nil
		// The controller names b master while it unfences.
		go func() {
			defer close(changed)
			id, e := int64(2), int32(2)
			b.m.ChangeBrokerRole(&id, "10.0.0.2:10911", &e, &e, []int64{2})
		}()
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
		}
	}
	if !b.startup(t) {
		t.Fatal("b startup")
	}
	<-changed
	ev := b.ev.all()
	unfence := slices.Index(ev, "br.fenced false")
	master := slices.IndexFunc(ev, func(s string) bool { return strings.HasPrefix(s, "br.master") })
	if unfence < 0 || master < 0 || master < unfence {
		t.Fatalf("the role change ran inside SetFenced(false): events %q", ev)
	}
}
