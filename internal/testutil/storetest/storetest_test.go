package storetest

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

func TestMessagesReadsTheWholeQueuePastOnePage(t *testing.T) {
	st := TempStore(t, "", nil)
	const n = 1100 // more than one 1024-message page
	for i := range n {
		for _, qid := range []int32{0, 1} {
			m := &message.Message{Topic: "T", QueueID: qid, Body: fmt.Appendf(nil, "%d/%d", qid, i),
				BornTimestamp: 1, BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
			if _, err := st.PutMessage(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.DefaultTimeout)
	defer cancel()
	if err := st.WaitDispatched(ctx, st.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	got := Messages(t, st, "T", 1)
	if len(got) != n {
		t.Fatalf("read %d messages, want %d", len(got), n)
	}
	for i, m := range got {
		if want := fmt.Sprintf("1/%d", i); string(m.Body) != want || m.QueueOffset != int64(i) {
			t.Fatalf("message %d: body %q offset %d, want %q at %d", i, m.Body, m.QueueOffset, want, i)
		}
	}
	if got := Messages(t, st, "Absent", 0); len(got) != 0 {
		t.Fatalf("absent topic: %d messages", len(got))
	}
}
