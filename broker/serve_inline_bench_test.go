package broker

import (
	"testing"

	"github.com/rmqio/rmq/remoting"
)

// BenchmarkServeInline is the broker's share of the requests an event loop
// serves itself, with allocation counts (the header is already decoded: the
// codec has its own benchmarks in remoting): "send" a plain 1 KiB send,
// "delay" the same with DELAY 2 (rewritten onto SCHEDULE_TOPIC_XXXX), and
// "pull" a pull of the one message behind the queue's end. A send the loop
// leaves to the pool (the store's next commitlog file or warmed range is not
// ready: store.ErrWouldBlock) is served as the pool serves it and counted
// in pooled/op.
//
//	go test ./broker -run '^$' -bench ServeInline -benchmem
func BenchmarkServeInline(b *testing.B) {
	tb := startBroker(b, func(o *Options) { o.MappedFileSizeCommitLog = 64 << 20 })
	tb.mustSend(sendArgs{topic: "BInl", body: []byte("create")})
	tb.waitDispatched()
	tb.pull(pullArgs{group: "BG", topic: "BInl", sysFlag: pullFlagSubscription}) // creates BG
	conn := &remoting.Conn{}
	body := make([]byte, 1024)
	for _, tc := range []struct {
		name  string
		props string
	}{{"send", coreProps("TAGS", "a")}, {"delay", coreProps("TAGS", "a", "DELAY", "2")}} {
		b.Run(tc.name, func(b *testing.B) {
			ext := sendArgs{code: remoting.SendMessageV2, topic: "BInl", props: tc.props}.ext()
			b.ReportAllocs()
			pooled := 0
			for b.Loop() {
				req := remoting.NewRequest(remoting.SendMessageV2, ext, body)
				resp, ok := tb.ServeInline(conn, req)
				if !ok && resp == nil {
					pooled++
					resp = tb.invoke(remoting.SendMessageV2, ext, body)
				}
				if resp == nil || resp.Code != remoting.Success {
					b.Fatalf("handled %v, reply %v", ok, resp)
				}
			}
			b.ReportMetric(float64(pooled)/float64(b.N), "pooled/op")
		})
	}
	b.Run("pull", func(b *testing.B) {
		tb.waitDispatched()
		end := tb.store.MaxOffsetInQueue("BInl", 0)
		ext := pullArgs{group: "BG", topic: "BInl", offset: end - 1, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"}.ext()
		b.ReportAllocs()
		for b.Loop() {
			resp, ok := tb.ServeInline(conn, remoting.NewRequest(remoting.PullMessage, ext, nil))
			if !ok || resp == nil || resp.Code != remoting.Success {
				b.Fatalf("handled %v, reply %v", ok, resp)
			}
		}
	})
}
