package store

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/rmqio/rmq/message"
)

func TestSetStoreHost(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	if s.StoreHost() != testStoreHost {
		t.Fatalf("StoreHost() = %s, want the option %s", s.StoreHost(), testStoreHost)
	}
	before := mustPut(t, s, testMessage("H", 0, 0))

	moved := netip.MustParseAddrPort("127.0.0.1:32769")
	if err := s.SetStoreHost(netip.MustParseAddrPort("[::ffff:127.0.0.1]:32769")); err != nil {
		t.Fatal(err)
	}
	if s.StoreHost() != moved {
		t.Fatalf("StoreHost() = %s after SetStoreHost, want %s", s.StoreHost(), moved)
	}
	after := mustPut(t, s, testMessage("H", 0, 1))
	batch, err := s.PutMessages([]*message.Message{testMessage("H", 0, 2), testMessage("H", 0, 3)})
	if err != nil {
		t.Fatal(err)
	}

	check := func(msgID string, phy int64, want netip.AddrPort) {
		t.Helper()
		host, off, err := message.DecodeMessageID(msgID)
		if err != nil || host != want || off != phy {
			t.Fatalf("msg id %s decodes to %s %d %v, want %s %d", msgID, host, off, err, want, phy)
		}
		rec, err := s.LookMessageByOffset(phy)
		if err != nil {
			t.Fatal(err)
		}
		m, err := message.DecodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if m.StoreHost != want || m.MsgID != msgID {
			t.Fatalf("record at %d: store host %s msg id %s, want %s %s", phy, m.StoreHost, m.MsgID, want, msgID)
		}
	}
	check(before.MsgID(0), before.PhysicalOffset, testStoreHost)
	check(after.MsgID(0), after.PhysicalOffset, moved)
	rec, err := s.LookMessageByOffset(batch.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	check(batch.MsgID(0), batch.PhysicalOffset, moved)
	check(batch.MsgID(1), batch.PhysicalOffset+int64(len(rec)), moved)

	if err := s.SetStoreHost(netip.MustParseAddrPort("[::1]:1")); !errors.Is(err, ErrHostNotIPv4) {
		t.Fatalf("SetStoreHost(IPv6) = %v, want ErrHostNotIPv4", err)
	}
	if s.StoreHost() != moved {
		t.Fatalf("a refused SetStoreHost changed the host to %s", s.StoreHost())
	}
}
