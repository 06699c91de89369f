package grpcapi

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// TestSendPipelineFrontEnds feeds the same sends to every front end of the
// send pipeline (broker/send.go) and asserts one outcome: stored on the
// same topic, or refused with the same remoting code (through the gRPC
// code table, refusalCodes, for SendMessage). Where a front end answers
// before the pipeline as its stock counterpart does (the 5.x proxy's own
// body size and property-key checks; SEND_REPLY, which pushes the reply
// instead of storing it; a batch, which stock refuses to delay or make
// transactional), the case says so with an override; "-" marks a case a
// front end cannot express (a delay level over gRPC).
func TestSendPipelineFrontEnds(t *testing.T) {
	const maxBody = 1024
	ts := startServer(t, func(o *broker.Options) {
		o.AutoCreateTopicEnable = false
		o.EnableTopicMessageTypeCheck = true
		o.MaxMessageSize = maxBody
	})
	ts.createTopic("PipeOK", 2)
	ts.b.Topics().Update(remotingTopic{name: "PipeRO", read: 2, write: 2, perm: topicgroup.PermRead}.config())
	fifo := remotingTopic{name: "PipeFifo", read: 2, write: 2, perm: 6}.config()
	fifo.Attributes = map[string]string{"message.type": "FIFO"}
	ts.b.Topics().Update(fifo)
	for name, typ := range map[string]string{"PipeDelay": "DELAY", "PipeTx": "TRANSACTION"} {
		tc := remotingTopic{name: name, read: 2, write: 2, perm: 6}.config()
		tc.Attributes = map[string]string{"message.type": typ}
		ts.b.Topics().Update(tc)
	}
	c := dial(t, ts, false)
	conn := &remoting.Conn{}
	due := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)

	// A case: the send, where it is stored (topic) or the code it is
	// refused with; per front end an override of the code ("" = as the
	// case says, "-" = not applicable).
	type frontEnd string
	const (
		inline frontEnd = "remoting inline"
		pooled frontEnd = "remoting pooled"
		batch  frontEnd = "batch"
		grpc   frontEnd = "gRPC SendMessage"
		reply  frontEnd = "SEND_REPLY"
	)
	type outcome struct {
		code   int32
		stored string // topic the message is stored on, when code is Success
	}
	type sendCase struct {
		name    string
		topic   string
		props   map[string]string
		sysFlag int32
		body    int
		want    outcome
		// grpc* describe the case for SendMessage.
		grpcMsg func(*v2.Message)
		over    map[frontEnd]any // outcome, v2.Code or "-"
		// onLoop: the event loop may serve the send itself, refusal
		// included (the inline mode: an existing topic, no hook but the
		// delay or timer one); else it hands it to the pool.
		onLoop bool
	}
	refused := func(code int32) outcome { return outcome{code: code} }
	stored := func(topic string) outcome { return outcome{code: remoting.Success, stored: topic} }
	cases := []sendCase{
		{name: "plain", topic: "PipeOK", want: stored("PipeOK"), onLoop: true,
			over: map[frontEnd]any{reply: refused(remoting.SystemError)}},
		{name: "no permission", topic: "PipeRO", want: refused(remoting.NoPermission), onLoop: true},
		{name: "missing topic", topic: "PipeMissing", want: refused(remoting.TopicNotExist)},
		{name: "wrong message type", topic: "PipeFifo", want: refused(remoting.MessageIllegal), onLoop: true,
			over: map[frontEnd]any{grpc: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, reply: refused(remoting.SystemError)}},
		{name: "oversize", topic: "PipeOK", body: maxBody + 1, want: refused(remoting.MessageIllegal), onLoop: true,
			over: map[frontEnd]any{grpc: v2.Code_MESSAGE_BODY_TOO_LARGE, reply: refused(remoting.SystemError)}},
		{name: "bad property", topic: "PipeOK", props: map[string]string{message.PropTimerDeliverMs: "soon"},
			want: refused(remoting.MessageIllegal),
			over: map[frontEnd]any{grpc: v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, reply: refused(remoting.SystemError)}},
		{name: "delay", topic: "PipeDelay", props: map[string]string{message.PropDelay: "2"}, want: stored(message.TopicSchedule), onLoop: true,
			over: map[frontEnd]any{batch: refused(remoting.MessageIllegal), grpc: "-", reply: refused(remoting.SystemError)}},
		{name: "timer", topic: "PipeDelay", props: map[string]string{message.PropTimerDeliverMs: due}, want: stored(message.TopicWheelTimer), onLoop: true,
			grpcMsg: func(m *v2.Message) {
				at, _ := strconv.ParseInt(due, 10, 64)
				m.SystemProperties.DeliveryTimestamp = timestamppb.New(time.UnixMilli(at))
				m.SystemProperties.MessageType = v2.MessageType_DELAY
			},
			over: map[frontEnd]any{reply: refused(remoting.SystemError)}},
		{name: "half", topic: "PipeTx", props: map[string]string{message.PropTranMsg: "true", message.PropProducerGroup: "PG"},
			sysFlag: message.TransactionPreparedType, want: stored(message.TopicTransHalf),
			grpcMsg: func(m *v2.Message) { m.SystemProperties.MessageType = v2.MessageType_TRANSACTION },
			over:    map[frontEnd]any{batch: refused(remoting.MessageIllegal), reply: refused(remoting.SystemError)}},
	}

	count := func(topic string) int64 {
		var n int64
		for q := range int32(32) {
			n += ts.b.Store().MaxOffsetInQueue(topic, q)
		}
		return n
	}
	onLoop := 0
	for _, tc := range cases {
		for _, fe := range []frontEnd{inline, pooled, batch, grpc, reply} {
			want, wantGrpc := tc.want, remotingCode(tc.want.code)
			switch o := tc.over[fe].(type) {
			case string:
				continue // not applicable
			case outcome:
				want, wantGrpc = o, remotingCode(o.code)
			case v2.Code:
				want, wantGrpc = outcome{code: -1}, o
			}
			body := make([]byte, max(tc.body, 1))
			var before int64
			if want.stored != "" {
				before = count(want.stored)
			}
			var got int32
			var gotGrpc v2.Code
			var remark string
			switch fe {
			case grpc:
				req := sendReq(tc.topic, body, "ID-"+tc.name)
				m := req.Messages[0]
				for k, v := range tc.props {
					m.UserProperties = map[string]string{k: v}
				}
				if tc.grpcMsg != nil {
					m.UserProperties = nil
					tc.grpcMsg(m)
				}
				resp, err := c.SendMessage(callCtx(t), req)
				if err != nil {
					t.Fatalf("%s via %s: %v", tc.name, fe, err)
				}
				gotGrpc, remark = resp.Status.Code, resp.Status.Message
				if len(resp.Entries) == 1 && resp.Entries[0].Status != nil {
					remark = resp.Entries[0].Status.Message
				}
			default:
				props := brokertest.Props()
				if len(tc.props) > 0 {
					props = message.MarshalProperties(tc.props)
				}
				s := brokertest.Send{Topic: tc.topic, Body: body, Props: props, SysFlag: tc.sysFlag, QueueID: -1}
				switch fe {
				case batch:
					s.Code, s.Batch, s.Props, s.Body = remoting.SendBatchMessage, true, "", batchBody(body, tc.props)
				case reply:
					s.Code = remoting.SendReplyMessageV2
				default:
					s.Code = remoting.SendMessageV2
				}
				req := remoting.NewRequest(s.Code, s.Ext(), s.Body)
				var resp *remoting.Command
				if fe == inline {
					var ok bool
					if resp, ok = ts.b.ServeInline(conn, req); !ok {
						resp = ts.b.ServeRemoting(conn, req) // as the event loop hands it to the pool
					}
					// An onLoop send may still go to the pool when the store's
					// next file is not ready (store.ErrWouldBlock), nothing
					// stored; a pool-only one never stays on the loop.
					if ok && !tc.onLoop {
						t.Errorf("%s: served on the event loop, want the pool", tc.name)
					}
					if ok {
						onLoop++
					}
				} else {
					resp = ts.b.ServeRemoting(conn, req)
				}
				got, remark = resp.Code, resp.Remark
				gotGrpc = remotingCode(got)
			}
			if want.code >= 0 && fe != grpc && got != want.code {
				t.Errorf("%s via %s: code %d %q, want %d", tc.name, fe, got, remark, want.code)
				continue
			}
			if gotGrpc != wantGrpc {
				t.Errorf("%s via %s: gRPC code %v %q, want %v", tc.name, fe, gotGrpc, remark, wantGrpc)
				continue
			}
			if want.stored != "" {
				testutil.WaitFor(t, 10*time.Second, func() bool { return count(want.stored) == before+1 },
					tc.name+" via "+string(fe)+" stored on "+want.stored)
			}
		}
	}
	if onLoop == 0 {
		t.Error("no send was served on the event loop: the inline mode went untested")
	}
}

// batchBody is a SEND_BATCH_MESSAGE body of one message (remoting-protocol
// §5.4).
func batchBody(body []byte, props map[string]string) []byte {
	p := message.MarshalProperties(props)
	total := 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(p)
	var out []byte
	for _, v := range []int{total, 0, 0, 0, len(body)} {
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	out = append(out, body...)
	out = append(out, byte(len(p)>>8), byte(len(p)))
	return append(out, p...)
}

// remotingCode is the gRPC code the proxy answers a remoting response code
// with: OK for SUCCESS, otherwise that of a broker refusal with the code.
func remotingCode(code int32) v2.Code {
	if code == remoting.Success {
		return v2.Code_OK
	}
	return toStatus(remoting.Refuse(code, "")).Code
}
