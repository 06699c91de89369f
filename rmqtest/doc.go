// Package rmqtest runs a RocketMQ name server and broker inside a Go test,
// the way miniredis or nats-server's RunServer do, with a broker clock the
// test can fast-forward.
//
//	func TestOrderIsCancelled(t *testing.T) {
//		srv := rmqtest.Start(t) // stopped and removed by t.Cleanup
//		srv.CreateTopic("Orders", 4)
//		ns := primitive.NewPassthroughResolver([]string{srv.NamesrvAddr()})
//		// ... stock client: producer.WithNsResolver(ns), consumer.WithNsResolver(ns)
//		p.SendSync(ctx, primitive.NewMessage("Orders", body).WithDelayTimeLevel(16)) // 30 min
//		srv.FastForward(30 * time.Minute) // returns in milliseconds
//		// the consumer receives the message now
//	}
//
// # The server
//
// Start listens on 127.0.0.1 ports the system chooses (no port probing, so
// parallel tests each get their own server), keeps the store in
// t.TempDir() with small files (8 MiB commitlog segments, small consume
// queue, timer log and index files), and returns once the broker has
// registered with the name server. Everything else is the stock broker
// configuration, except the stock fast failure (brokerFastFailureEnable),
// which is off: on a loaded CI runner it would answer SYSTEM_BUSY to a send
// the scheduler kept waiting 200 ms (turn it on to test a client's overload
// path); WithBrokerConfig and WithNamesrvConfig take broker.conf and
// namesrv.conf keys through the same binding as the files, so every key
// works and an unknown key or a bad value fails the test (Run returns it).
// Topics are created
// on the first send, as with autoCreateTopicEnable; CreateTopic creates one
// ahead and waits for its route, which a push consumer of the stock Go
// client needs before it can start. Give each client in a test process its
// own instance name (producer.WithInstanceName, consumer.WithInstance): the
// Go client shares one connection set per instance name. Close stops the
// server (t.Cleanup calls it for Start).
//
// # One server for a test binary: Run and T
//
// Run starts the same server without a test, for TestMain (see ExampleRun):
// its store is a temp directory of its own that Close removes, and its logs
// are discarded unless RMQ_TEST_LOG is set, which sends them to stderr
// (Start's go to t.Log). CreateTopic, WaitProducer, FastForward and Settle
// report a failure by failing a test; on a server from Run they have none
// and panic instead, with a message that names the way out: in a test, call
// them on srv.T(t), a view of the same server bound to t. Views share
// everything (name server, broker, virtual clock, and FastForward's turn:
// one at a time across views); only the test they fail differs, so parallel tests each take
// their own view. The other methods never fail a test and work on any view.
// Tests sharing a server share its state: give each its own topics and
// groups, and remember that a FastForward moves the clock for all of them.
//
// # Restarts
//
// Restart stops the broker cleanly and starts a new one on the same store
// and the same ports (main, VIP and gRPC); the name server stays up and the
// new broker is registered before Restart returns, so clients reconnect as
// to a restarted production broker. RestartCrash restarts on the path a
// kill -9 leads to: the store's abort marker is left behind and the
// checkpoint is put back as it was on disk before the stop, so the store's
// recovery verifies and re-dispatches the commitlog records after it (the
// store's runtime info reports recoveryCleanShutdown=false). It emulates a
// process killed with the page cache intact: everything written to the
// files survives, as after kill -9 (not a power loss, which loses what was
// not fsynced). It does not emulate what a kill loses in memory, because
// the old broker is still shut down cleanly first: consumer offsets
// committed since the last periodic persist (5 s), the delay and timer
// services' progress, consumer filters; after a real kill those messages
// would be consumed or delivered again. Requests in flight at the call are
// answered or refused as at a clean stop. Neither restart may run at the
// same time as the server's other methods.
//
// The stock Go client's producer reconnects on its next send. Its push
// consumer resumes only when the pull it had in flight times out (30 s):
// the broker drops held pulls when it stops, as the stock broker does, and
// the Go client does not fail a request whose connection closed. A consumer
// group started after the restart consumes at once.
//
// # The gRPC endpoint
//
// WithGRPC also serves the endpoint of the 5.x SDKs (package grpcapi, what
// `rmq broker` serves with enableGrpc=true) on a free port, reported by
// GRPCAddr. WithBrokerConfig takes its keys too (enableGrpc,
// grpcServerPort, the proxy's long-polling and invisible-time keys).
//
// # Inspecting the broker
//
// Without a client: MinOffset and MaxOffset of a queue, CommittedOffset of
// a group in a queue, Lag of a group on a topic (the diff of mqadmin
// consumerProgress), and Messages, every message of a topic as stored
// (body, tags, keys, properties, queue, offset, store time). Send stores a
// message through the broker's own send path (topic checks and the delay,
// timer and transaction hooks), for a test that needs data but no
// producer. Reads first wait until every message stored before them is in
// its consume queue.
//
// # The virtual clock
//
// The broker's message timeline runs on a virtual clock: the wall clock plus
// an offset that starts at 0 (WithClockStart shifts it) and that FastForward
// grows. Now reads it. On this clock are:
//
//   - store timestamps (STORE_TIMESTAMP of every message, also of the
//     copies the broker stores when delivering delayed messages);
//   - delay levels (DELAY, WithDelayTimeLevel, consumer retries): due at the
//     schedule copy's store timestamp plus the level's delay;
//   - timer messages: TIMER_DELAY_SEC / TIMER_DELAY_MS count from the
//     virtual now at the send; TIMER_DELIVER_MS (Go WithDelayTimestamp) is an
//     absolute time compared with the virtual clock, so compute it from
//     srv.Now(), not time.Now(), once the server has been fast-forwarded;
//   - transaction check passes (every transactionCheckInterval, 60 s stock)
//     and the age of half messages;
//   - POP invisible time: a pop's popTime is read from it, and the message
//     comes back when its revive trigger falls due in the timer store.
//
// Real time stays for everything between the broker and its clients:
// heartbeats and their expiry, queue locks, long polling, connection idle
// timeouts, registration with the name server, client-side send and consume
// timeouts, and the runtime statistics. A jump of hours therefore expires no
// client. Born timestamps are set by the client from its own (real) clock,
// so after a FastForward a message's born time lies before its store time.
// The store's flush timers also run on the virtual clock; a FastForward
// fires them early, which only flushes sooner, but with
// flushDiskType=SYNC_FLUSH a send waiting for its flush while the clock
// jumps may be answered FLUSH_DISK_TIMEOUT.
//
// # FastForward
//
// FastForward(d) runs the broker's own stepping (broker.FastForward, the
// same that CLOCK_FAST_FORWARD runs for `rmq admin fastForward` against a
// broker started with clockControlEnable=true, for tests in other
// languages). It moves the virtual clock d ahead in steps: to the earliest
// time something is due (a delay level's head, a timer message or its
// wheel slot, a check pass while a half message waits for one), then it
// waits until the broker has stored everything due at that time on its
// topic and consume queue, then on to the next, up to now+d. So deliveries
// happen in due order, each at (never before) its time on the virtual
// clock, and their store timestamps say when; FastForward returns once all
// that is due by now+d is stored and dispatched. Consumers then get the
// messages on their next pull, at once with long polling, in real time:
// wait for them with a real-time bound, not a sleep. A step that does not
// settle within the settle timeout (WithSettleTimeout, 30 s) fails the test.
// Settle waits the same way without moving the clock. FastForward knows
// only what the broker has stored when it starts: a client's request still
// in flight (an asynchronous send, a consumer sending back a message it
// failed to consume, a transaction's answer) is not waited for. A consumer
// retry, for one, reaches the broker some time after the consume call
// returned RECONSUME_LATER; a test that needs it can fast-forward in small
// steps until the retried message arrives.
//
// Transaction check-backs are made by the check passes: a half message is
// checked by the first pass at least transactionTimeOut (6 s) after it was
// born, so fast-forward at least one transactionCheckInterval (60 s) past
// the send. The check goes to a connected producer of the message's group;
// the stock Go client connects its producer in a heartbeat a second after
// its first send, so call WaitProducer before the FastForward. The
// producer's answer (END_TRANSACTION) arrives asynchronously after
// FastForward has returned. As on a stock broker, the age of a half message
// counts from the earlier of its born (client, real) and store (virtual)
// timestamps: a half message sent after earlier fast-forwards counts as
// older by that much, is checked at the next pass, and after more than 72 h
// of accumulated fast-forward is discarded at once (stock's maximum half
// message age). Send transactional messages on a server that has not been
// fast-forwarded further than that.
package rmqtest
