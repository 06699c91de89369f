package broker

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// The remoting server lends send bodies to the broker (LentBodyCodes) and
// reuses their memory once the send returns. Many sends at a time, of every
// send code and path (inline, the pool with its put hooks, batches, delay
// levels), with bodies from a few bytes to over a megabyte (frames that
// arrive in pieces), are all stored as sent.
func TestSendLentBodiesStoredIntact(t *testing.T) {
	tb := startBroker(t, func(o *Options) {
		o.MaxMessageSize = 4 << 20
		o.MappedFileSizeCommitLog = 16 << 20
	})
	tb.mustSend(sendArgs{topic: "TopicLent", body: []byte("create"), queueID: 0})
	sizes := []int{3, 700, 1 << 10, 9000, 64 << 10, 300 << 10, 1<<20 + 5}
	type sent struct {
		ids  []string
		body [][]byte
	}
	var mu sync.Mutex
	var all []sent
	testutil.Concurrently(t, 8, func(g int) error {
		cli := tb.json
		if g%2 == 1 {
			cli = tb.bin
		}
		rng := rand.New(rand.NewPCG(uint64(g), 2))
		body := func() []byte {
			b := make([]byte, sizes[rng.IntN(len(sizes))])
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
		for i := range 12 {
			a := sendArgs{topic: "TopicLent", queueID: int32(i % 4), props: coreProps("KEYS", fmt.Sprint(g, i))}
			var bodies [][]byte
			switch i % 4 {
			case 0:
				a.code = remoting.SendMessageV2 // inline
			case 1:
				a.code = remoting.SendMessage // the pool: put hooks on the map
			case 2:
				a.code = remoting.SendMessageV2
				a.props = coreProps("DELAY", "1", "KEYS", fmt.Sprint(g, i))
			case 3:
				a.code, a.batch = remoting.SendBatchMessage, true
				var entries []message.BatchEntry
				for range 3 {
					b := body()
					bodies = append(bodies, b)
					entries = append(entries, message.BatchEntry{Body: b})
				}
				a.body = coreBatchBody(entries...)
			}
			if bodies == nil {
				a.body = body()
				bodies = [][]byte{a.body}
			}
			resp, err := cli.InvokeTimeout(tb.listenAddr(), remoting.NewRequest(a.code, a.ext(), a.body), coreTestTimeout)
			if err != nil || resp.Code != remoting.Success {
				return fmt.Errorf("send %d: %v %v", i, resp, err)
			}
			mu.Lock()
			all = append(all, sent{strings.Split(resp.ExtFields["msgId"], ","), bodies})
			mu.Unlock()
		}
		return nil
	})
	for _, s := range all {
		if len(s.ids) != len(s.body) {
			t.Fatalf("%d message ids for %d bodies", len(s.ids), len(s.body))
		}
		for i, id := range s.ids {
			_, phy, err := message.DecodeMessageID(id)
			if err != nil {
				t.Fatalf("msgId %q: %v", id, err)
			}
			view := tb.invoke(remoting.ViewMessageByID, map[string]string{"offset": fmt.Sprint(phy)}, nil)
			if view.Code != remoting.Success {
				t.Fatalf("view %s: code %d %q", id, view.Code, view.Remark)
			}
			if m := coreRecords(t, view.Body)[0]; !bytes.Equal(m.Body, s.body[i]) {
				t.Fatalf("message %s: stored %d bytes that differ from the %d sent", id, len(m.Body), len(s.body[i]))
			}
		}
	}
}
