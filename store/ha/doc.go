// Package ha is RocketMQ's classic master/slave replication (4.9.8
// HAService, HAConnection and HAClient; 5.x DefaultHAService speaks the
// same bytes), so that rmq and Java brokers replicate to each other.
//
// # Wire format (every integer big-endian, no handshake)
//
//	slave → master   int64 the slave's commitlog end. The first value on a
//	                 connection is where the master starts; every later one
//	                 is an ack. Only the last complete 8-byte value of what
//	                 one read returned counts.
//	master → slave   int64 start offset · int32 size · size bytes of raw
//	                 commitlog (size 0: a heartbeat). A chunk is at most
//	                 haTransferBatchSize bytes and never crosses a commitlog
//	                 file, and carries the BLANK filler at a file's end as
//	                 the file holds it.
//
// A first value of 0 starts the stream at the beginning of the master's
// newest file (a new slave gets no history), any other value exactly
// there.
//
// # API
//
// Master side (ASYNC_MASTER, SYNC_MASTER):
//
//	m := ha.NewMaster(src, cfg)        // src: *store.Store (Source)
//	m.Start()                          // listens on cfg.ListenAddr
//	m.IsSlaveOK(putEnd)                // connections > 0 && putEnd-Push2SlaveMaxOffset < FallBehindMax
//	m.WaitReplicated(end, fn)          // fn(true) once acked ≥ end, fn(false) after SlaveTimeout
//	m.Stats()                          // connections, push2SlaveMaxOffset, per-slave acks, master max
//	m.Close()
//
// Slave side (SLAVE):
//
//	c := ha.NewClient(sink, cfg)       // sink: *store.Store (Sink)
//	c.Start()
//	c.SetMasterAddr("host:port")       // any time; "" disconnects
//	c.Stats()                          // master address, connected, reported offset
//	c.Close()
//
// WaitReplicated keeps its callbacks in one heap ordered by offset (and a
// FIFO of deadlines, which slaveTimeout makes monotone): an ack releases
// every waiting send it covers in one pass, one goroutine expires the late
// ones, and no goroutine or poll exists per send (4.9.8's
// GroupTransferService, without its 1 s polling).
//
// The master never holds a store lock across socket I/O: a connection's
// writer copies at most one batch out of the commitlog (Source.ReadCommitLog)
// and then writes it.
package ha
