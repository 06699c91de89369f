package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// testBroker is an in-process broker on random 127.0.0.1 ports with one
// client per serialize type.
type testBroker struct {
	*Broker
	t    testing.TB
	opts Options
	json *remoting.Client
	bin  *remoting.Client
	// diskFull: the test shuts the broker down on a full disk, where
	// Shutdown reports the files it could not write (ErrDiskFull).
	diskFull bool
}

// coreTestTimeout bounds every request a test makes.
const coreTestTimeout = 5 * time.Second

// startBroker starts a broker with small files under t.TempDir() and no
// name server; mutate adjusts the options first. It stops with the test.
func startBroker(t testing.TB, mutate func(*Options)) *testBroker {
	t.Helper()
	return startBrokerWith(t, coreTestOptions(t, mutate), nil)
}

// coreTestOptions are the options startBroker uses.
func coreTestOptions(t testing.TB, mutate func(*Options)) Options {
	t.Helper()
	o := DefaultOptions()
	o.StorePathRootDir = t.TempDir()
	o.ListenHost = "127.0.0.1"
	o.BrokerIP1 = "127.0.0.1"
	o.ListenPort = testutil.FreePortPair(t)
	o.MappedFileSizeCommitLog = 1 << 20
	o.MappedFileSizeConsumeQueue = 20 * 1024
	o.MaxMessageSize = 64 << 10
	o.Logger = testlog.New(t)
	if mutate != nil {
		mutate(&o)
	}
	return o
}

// startBrokerWith starts a broker with exactly o (used to restart on a
// store directory); setup, if set, runs between New and Start.
func startBrokerWith(t testing.TB, o Options, setup func(*Broker)) *testBroker {
	t.Helper()
	b, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if setup != nil {
		setup(b)
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		t.Fatalf("Start: %v", err)
	}
	tb := &testBroker{
		Broker: b, t: t, opts: o,
		json: remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeJSON}),
		bin:  remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ}),
	}
	t.Cleanup(tb.stop)
	return tb
}

func (tb *testBroker) stop() {
	tb.json.Close()
	tb.bin.Close()
	if err := tb.Shutdown(); err != nil && !(tb.diskFull && errors.Is(err, store.ErrDiskFull)) {
		tb.t.Errorf("Shutdown: %v", err)
	}
}

// restart shuts the broker down and starts a new one on the same store
// directory and port.
func (tb *testBroker) restart() *testBroker {
	tb.t.Helper()
	tb.stop()
	return startBrokerWith(tb.t, tb.opts, nil)
}

// waitDispatched waits until every stored message is in its consume queue
// (dispatch is asynchronous, as in the stock store).
func (tb *testBroker) waitDispatched() {
	tb.t.Helper()
	testutil.WaitFor(tb.t, coreTestTimeout, func() bool { return tb.Store().DispatchBehind() == 0 }, "dispatch to catch up")
}

// invoke sends a request with the JSON client and fails the test on
// transport errors.
func (tb *testBroker) invoke(code int32, ext map[string]string, body []byte) *remoting.Command {
	tb.t.Helper()
	return tb.invokeWith(tb.json, code, ext, body)
}

// listenAddr is the listening socket, not Addr(): UPDATE_BROKER_CONFIG may
// change what the broker advertises, never where it listens.
func (tb *testBroker) listenAddr() string {
	return joinHostPort(tb.Broker.opts.ListenHost, tb.Broker.opts.ListenPort)
}

func (tb *testBroker) invokeWith(cli *remoting.Client, code int32, ext map[string]string, body []byte) *remoting.Command {
	tb.t.Helper()
	resp, err := cli.InvokeTimeout(tb.listenAddr(), remoting.NewRequest(code, ext, body), coreTestTimeout)
	if err != nil {
		tb.t.Fatalf("request %d: %v", code, err)
	}
	return resp
}

// sendArgs describes one producer send.
type sendArgs struct {
	code              int32 // SendMessage (V1 names) or SendMessageV2/SendBatchMessage/... (letters)
	topic             string
	body              []byte
	props             string // raw properties text
	queueID           int32
	sysFlag           int32
	defaultTopic      string // "" → TBW102
	defaultQueueNums  int32  // 0 → 4
	reconsumeTimes    string // "" → absent
	maxReconsumeTimes string // "" → absent
	batch             bool
	drop              string // V1 name of a header field to leave out
}

func (a sendArgs) ext() map[string]string {
	return brokertest.Send{
		Code: a.code, Topic: a.topic, Body: a.body, Props: a.props, QueueID: a.queueID, SysFlag: a.sysFlag,
		DefaultTopic: a.defaultTopic, DefaultQueueNums: a.defaultQueueNums, ReconsumeTimes: a.reconsumeTimes,
		MaxReconsumeTimes: a.maxReconsumeTimes, Batch: a.batch, Drop: a.drop,
	}.Ext()
}

func (tb *testBroker) send(a sendArgs) *remoting.Command {
	tb.t.Helper()
	if a.code == 0 {
		a.code = remoting.SendMessageV2
	}
	return tb.invoke(a.code, a.ext(), a.body)
}

// mustSend sends and requires SUCCESS.
func (tb *testBroker) mustSend(a sendArgs) *remoting.Command {
	tb.t.Helper()
	resp := tb.send(a)
	if resp.Code != remoting.Success {
		tb.t.Fatalf("send to %s: code %d remark %q", a.topic, resp.Code, resp.Remark)
	}
	return resp
}

// pullArgs describes one pull request.
type pullArgs struct {
	group         string
	topic         string
	queueID       int32
	offset        int64
	maxMsgs       int32
	sysFlag       int32
	commitOffset  int64
	suspendMillis int64
	subscription  string
	subVersion    int64
	exprType      string // "" → TAG
}

func (a pullArgs) ext() map[string]string {
	return brokertest.Pull{
		Group: a.group, Topic: a.topic, QueueID: a.queueID, Offset: a.offset, MaxMsgs: a.maxMsgs, SysFlag: a.sysFlag,
		CommitOffset: a.commitOffset, SuspendMillis: a.suspendMillis, Subscription: a.subscription, SubVersion: a.subVersion,
		ExpressionType: a.exprType,
	}.Ext()
}

func (tb *testBroker) pull(a pullArgs) *remoting.Command {
	tb.t.Helper()
	return tb.invoke(remoting.PullMessage, a.ext(), nil)
}

// records decodes a pull or view body.
func coreRecords(t *testing.T, body []byte) []*message.MessageExt { return brokertest.Records(t, body) }

func coreExtInt(t *testing.T, resp *remoting.Command, key string) int64 {
	return brokertest.ExtInt(t, resp, key)
}

// coreProps renders properties Java-style (k\x01v pairs joined by \x02).
func coreProps(kv ...string) string { return brokertest.Props(kv...) }

// coreBatchBody encodes a SEND_BATCH_MESSAGE body (remoting-protocol §5.4).
func coreBatchBody(entries ...message.BatchEntry) []byte {
	var out []byte
	for _, e := range entries {
		props := message.MarshalProperties(e.Properties)
		total := 4 + 4 + 4 + 4 + 4 + len(e.Body) + 2 + len(props)
		out = coreAppendInt32(out, int32(total))
		out = coreAppendInt32(out, 0) // magic
		out = coreAppendInt32(out, 0) // body crc
		out = coreAppendInt32(out, e.Flag)
		out = coreAppendInt32(out, int32(len(e.Body)))
		out = append(out, e.Body...)
		out = append(out, byte(len(props)>>8), byte(len(props)))
		out = append(out, props...)
	}
	return out
}

func coreAppendInt32(b []byte, v int32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
