package store

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

// BenchmarkSyncFlushPut is the store's share of a SYNC_FLUSH send load: a
// closed loop of inFlight senders, each putting a 1 KiB message without
// waiting and sending the next once OnFlushed acknowledged it, as the
// broker's send path does. Besides time per message it reports the process
// CPU per message, user and system apart (the syscalls, faults and page
// writeback a flush scheme costs show as system time):
//
//	go test ./store -run '^$' -bench SyncFlushPut -benchtime 100000x
func BenchmarkSyncFlushPut(b *testing.B) {
	for _, tc := range []struct {
		name  string
		flush FlushDiskType
	}{
		{name: "sync", flush: SyncFlush},
		{name: "async", flush: AsyncFlush},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := testOptions(b.TempDir())
			o.FlushDiskType = tc.flush
			// Stock-sized queue and index files: creating files is not what
			// is measured.
			o.MappedFileSizeCommitLog = 64 << 20
			o.MappedFileSizeConsumeQueue = DefaultMappedFileSizeConsumeQueue
			o.Index = IndexOptions{}
			o.FlushInterval = 500 * time.Millisecond
			o.FlushConsumeQueueInterval = time.Second
			o.SyncFlushTimeout = 10 * time.Second
			s := openStore(b, o)
			body := make([]byte, 1024)
			const inFlight = 128
			var flushes0 int64
			var ru0 syscall.Rusage
			var wg sync.WaitGroup
			next := make(chan int, b.N)
			for i := range b.N {
				next <- i
			}
			close(next)
			b.ResetTimer()
			flushes0 = s.cl.flushes.Load()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			start := time.Now()
			for range inFlight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					acked := make(chan bool, 1)
					for i := range next {
						m := &message.Message{Topic: "Bench", QueueID: int32(i % 8), Body: body, SkipFlushWait: true,
							Properties: map[string]string{"UNIQ_KEY": "0A0000070000000000000000", "WAIT": "true"}}
						r, err := s.PutMessage(m)
						if err != nil {
							b.Error(err)
							return
						}
						s.OnFlushed(r.PhysicalOffset+int64(r.WroteBytes), func(ok bool) { acked <- ok })
						if !<-acked {
							b.Error("flush timed out")
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.StopTimer()
			us := func(t1, t0 syscall.Timeval) float64 {
				return float64((t1.Sec-t0.Sec)*1e6+(t1.Usec-t0.Usec)) / float64(b.N)
			}
			b.ReportMetric(us(ru.Utime, ru0.Utime), "user-us/msg")
			b.ReportMetric(us(ru.Stime, ru0.Stime), "sys-us/msg")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
			if n := s.cl.flushes.Load() - flushes0; n > 0 && tc.flush == SyncFlush {
				b.ReportMetric(float64(b.N)/float64(n), "msg/flush")
			}
		})
	}
}
