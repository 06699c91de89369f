// Package storetest opens small real stores for the tests of the packages
// above the store (broker and its subpackages, schedule, timer). The store's
// own tests cannot import it.
package storetest

import (
	"net/netip"
	"testing"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// TempStore opens a store with 1 MiB commitlog files and 1024-unit consume
// queue files under dir (t.TempDir() when empty), storing as 127.0.0.1:10911;
// mutate adjusts the options first. The store closes with the test.
func TempStore(t testing.TB, dir string, mutate func(*store.Options)) *store.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o := store.Options{
		Dir:                        dir,
		MappedFileSizeCommitLog:    1 << 20,
		MappedFileSizeConsumeQueue: 20 * 1024,
		StoreHost:                  netip.MustParseAddrPort("127.0.0.1:10911"),
		Logger:                     testlog.New(t),
	}
	if mutate != nil {
		mutate(&o)
	}
	st, err := store.Open(o)
	if err != nil {
		t.Fatalf("storetest: open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	return st
}

// Messages reads every message of topic's queue qid from offset 0, as far as
// the consume queue reaches (callers wait for dispatch first).
func Messages(t testing.TB, st *store.Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := int64(0); ; {
		r := st.GetMessage(topic, qid, off, 1024, 64<<20, nil)
		if r == nil || r.Status != store.Found {
			return out
		}
		for _, raw := range r.Messages {
			m, err := message.DecodeRecord(raw)
			if err != nil {
				t.Fatalf("storetest: decode %s/%d: %v", topic, qid, err)
			}
			out = append(out, m)
		}
		off = r.NextBeginOffset
	}
}
