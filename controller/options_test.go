package controller

import (
	"errors"
	"testing"
)

func TestPeers(t *testing.T) {
	c := DefaultConfig()
	c.Peers, c.SelfID, c.Group = "n0-127.0.0.1:9878; n1-127.0.0.1:9868;n2-127.0.0.1:9858;", "n1", "g"
	all, self, group, err := c.peers()
	if err != nil || len(all) != 3 || self != (peer{ID: "n1", RaftAddr: "127.0.0.1:9868"}) || group != "g" {
		t.Fatalf("DLedger peers: %v %+v %q %v", all, self, group, err)
	}
	j := DefaultConfig()
	j.ControllerType, j.JRaftServerID = JRaftController, "h:2"
	j.JRaftInitConf, j.JRaftRPCAddrs = "h:1,h:2,h:3", "h:11,h:12,h:13"
	all, self, group, err = j.peers()
	if err != nil || len(all) != 3 || self != (peer{ID: "h:2", RaftAddr: "h:2", RPCAddr: "h:12"}) || group != "jRaft-Controller" {
		t.Fatalf("jRaft peers: %v %+v %q %v", all, self, group, err)
	}
	for _, bad := range []Config{
		{ControllerType: DLedgerController, SelfID: "n0"},
		{ControllerType: DLedgerController, Peers: "n0-127.0.0.1:1"},
		{ControllerType: DLedgerController, Peers: "n0-127.0.0.1:1", SelfID: "n9"},
		{ControllerType: DLedgerController, Peers: "n0:127.0.0.1:1", SelfID: "n0"},
		{ControllerType: DLedgerController, Peers: "n0-nohost", SelfID: "n0"},
		{ControllerType: DLedgerController, Peers: "n0-h:1;n0-h:2", SelfID: "n0"},
		{ControllerType: JRaftController, JRaftInitConf: "h:1,h:2", JRaftRPCAddrs: "h:11", JRaftServerID: "h:1"},
		{ControllerType: "zk", Peers: "n0-h:1", SelfID: "n0"},
	} {
		if _, _, _, err := bad.peers(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestListenPortIsNotTheRaftPort: with the DLedger keys the remoting
// server needs a port of its own (stock serves both on the peer port).
func TestListenPortIsNotTheRaftPort(t *testing.T) {
	o := DefaultOptions()
	o.Peers, o.SelfID, o.ListenHost, o.ListenPort = "n0-127.0.0.1:29878", "n0", "127.0.0.1", 29878
	if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("New: %v", err)
	}
}
