package broker

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Two brokers in one process share no state: a config update on one leaves
// the other's configuration as it was, and an update in progress on one
// does not hold up the other's (the UPDATE_BROKER_CONFIG lock was once a
// package variable, one for the process).
func TestTwoBrokersInOneProcessAreIndependent(t *testing.T) {
	a, b := startBroker(t, nil), startBroker(t, nil)
	rw := int32(topicgroup.PermRead | topicgroup.PermWrite)
	if a.runtime().BrokerPermission != rw || b.runtime().BrokerPermission != rw {
		t.Fatalf("start: permissions %d and %d, want %d", a.runtime().BrokerPermission, b.runtime().BrokerPermission, rw)
	}

	if r := a.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=4\ndefaultQueryMaxNum=7\n")); r.Code != remoting.Success {
		t.Fatalf("update a: %d %q", r.Code, r.Remark)
	}
	if rc := a.runtime(); rc.BrokerPermission != topicgroup.PermRead || rc.DefaultQueryMaxNum != 7 {
		t.Fatalf("a after its update: permission %d, defaultQueryMaxNum %d", rc.BrokerPermission, rc.DefaultQueryMaxNum)
	}
	if rc := b.runtime(); rc.BrokerPermission != rw || rc.DefaultQueryMaxNum == 7 || rc.version.Counter != 0 {
		t.Fatalf("b changed by a's update: permission %d, defaultQueryMaxNum %d, version %d", rc.BrokerPermission, rc.DefaultQueryMaxNum, rc.version.Counter)
	}

	// An update held on a (its lock taken) does not hold up b's.
	a.configMu.Lock()
	done := make(chan *remoting.Command, 1)
	go func() { done <- b.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=2\n")) }()
	select {
	case r := <-done:
		if r.Code != remoting.Success {
			t.Fatalf("update b: %d %q", r.Code, r.Remark)
		}
	case <-time.After(coreTestTimeout):
		a.configMu.Unlock()
		t.Fatal("b's update waited for a's")
	}
	a.configMu.Unlock()
	if a.runtime().BrokerPermission != topicgroup.PermRead || b.runtime().BrokerPermission != topicgroup.PermWrite {
		t.Fatalf("after b's update: a %d, b %d", a.runtime().BrokerPermission, b.runtime().BrokerPermission)
	}
}
