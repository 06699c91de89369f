package broker

import (
	"strconv"
	"sync"
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// Under SYNC_FLUSH the send reply is written by the group-commit flusher
// (answerAfterStore): every reply still arrives complete, after its bytes are
// durable, whatever the send code.
func TestSyncFlushRepliesAfterTheFlush(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.FlushDiskType = "SYNC_FLUSH" })
	tests := []struct {
		name string
		args sendArgs
	}{
		{name: "SEND_MESSAGE_V2", args: sendArgs{topic: "SyncV2", body: []byte("v2")}},
		{name: "SEND_MESSAGE", args: sendArgs{code: remoting.SendMessage, topic: "SyncV1", body: []byte("v1")}},
		{name: "WAIT=false answers at once", args: sendArgs{topic: "SyncNoWait", body: []byte("nw"), props: "WAIT\x01false\x02"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const senders = 16
			var wg sync.WaitGroup
			offsets := make(chan int64, senders)
			for range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := tc.args
					a.queueID = 0
					resp := tb.send(a)
					if resp.Code != remoting.Success || resp.ExtFields["msgId"] == "" || resp.ExtFields["queueId"] != "0" {
						t.Errorf("reply code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
						return
					}
					off, err := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
					if err != nil {
						t.Errorf("queueOffset %q", resp.ExtFields["queueOffset"])
					}
					offsets <- off
				}()
			}
			wg.Wait()
			close(offsets)
			seen := map[int64]bool{}
			for off := range offsets {
				if seen[off] || off < 0 || off >= senders {
					t.Fatalf("queue offset %d repeated or out of range", off)
				}
				seen[off] = true
			}
			info := tb.Store().RuntimeInfo()
			if info["commitLogFlushedOffset"] != info["commitLogMaxOffset"] && tc.args.props == "" {
				t.Fatalf("replies came back before the flush: flushed %s of %s", info["commitLogFlushedOffset"], info["commitLogMaxOffset"])
			}
		})
	}
}
