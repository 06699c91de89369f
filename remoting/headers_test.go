package remoting

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// headerDecode decodes c into a T and returns it with the error, for tests
// that go over every typed header.
type headerDecode struct {
	name   string
	decode func(c *Command) (any, error)
}

func decodeAs[T any, P headerDecoder[T]]() headerDecode {
	var zero T
	return headerDecode{
		name:   reflect.TypeOf(zero).Name(),
		decode: func(c *Command) (any, error) { return DecodeHeader[T, P](c) },
	}
}

// allHeaders is every typed header; TestAllHeadersListed keeps it complete.
var allHeaders = []headerDecode{
	decodeAs[PutKVConfigRequestHeader](), decodeAs[KVConfigRequestHeader](),
	// the controller's (headers_controller.go)
	decodeAs[BrokerHeartbeatRequestHeader](), decodeAs[AlterSyncStateSetRequestHeader](),
	decodeAs[ElectMasterRequestHeader](), decodeAs[ElectMasterResponseHeader](), decodeAs[BrokerNameRequestHeader](),
	decodeAs[GetMetaDataResponseHeader](), decodeAs[CleanControllerBrokerDataRequestHeader](),
	decodeAs[BrokerSetRequestHeader](), decodeAs[ApplyBrokerIDRequestHeader](),
	decodeAs[RegisterBrokerToControllerRequestHeader](), decodeAs[ControllerReplyHeader](),
	decodeAs[UserRequestHeader](), decodeAs[ListUsersRequestHeader](), decodeAs[AclRequestHeader](),
	decodeAs[DeleteAclRequestHeader](), decodeAs[ListAclsRequestHeader](),
	decodeAs[QueryTopicsByConsumerRequestHeader](), decodeAs[QuerySubscriptionByConsumerRequestHeader](),
	decodeAs[UpdateGroupForbiddenRequestHeader](),
	decodeAs[GetKVListByNamespaceRequestHeader](), decodeAs[RegisterBrokerRequestHeader](),
	decodeAs[BrokerIdentityRequestHeader](), decodeAs[GetRouteInfoRequestHeader](),
	decodeAs[WritePermOfBrokerRequestHeader](), decodeAs[DeleteTopicFromNamesrvRequestHeader](),
	decodeAs[TopicRequestHeader](), decodeAs[GetTopicsByClusterRequestHeader](),
	decodeAs[PullMessageRequestHeader](), decodeAs[QueueRequestHeader](),
	decodeAs[SearchOffsetRequestHeader](), decodeAs[ViewMessageRequestHeader](),
	decodeAs[QueryConsumerOffsetRequestHeader](), decodeAs[UpdateConsumerOffsetRequestHeader](),
	decodeAs[QueryMessageRequestHeader](), decodeAs[RecallMessageRequestHeader](),
	decodeAs[ViewBrokerStatsDataRequestHeader](), decodeAs[GetConsumeStatsInBrokerHeader](),
	decodeAs[FastForwardRequestHeader](),
	decodeAs[UnregisterClientRequestHeader](), decodeAs[ConsumerGroupRequestHeader](),
	decodeAs[GetProducerConnectionListRequestHeader](), decodeAs[GetSubscriptionGroupConfigRequestHeader](),
	decodeAs[DeleteSubscriptionGroupRequestHeader](), decodeAs[GetConsumerRunningInfoRequestHeader](),
	decodeAs[ConsumeMessageDirectlyResultRequestHeader](), decodeAs[GetConsumeStatsRequestHeader](),
	decodeAs[ResetOffsetRequestHeader](), decodeAs[GetConsumerStatusRequestHeader](),
	decodeAs[QueryConsumeTimeSpanRequestHeader](), decodeAs[QueryCorrectionOffsetHeader](),
	decodeAs[CloneGroupOffsetRequestHeader](), decodeAs[QueryConsumeQueueRequestHeader](),
	decodeAs[PopMessageRequestHeader](), decodeAs[AckMessageRequestHeader](),
	decodeAs[ChangeInvisibleTimeRequestHeader](), decodeAs[PeekMessageRequestHeader](),
	decodeAs[NotificationRequestHeader](), decodeAs[PollingInfoRequestHeader](),
	decodeAs[EndTransactionRequestHeader](), decodeAs[ResumeCheckHalfMessageRequestHeader](),
	decodeAs[CreateTopicRequestHeader](),
	decodeAs[CreateAccessConfigRequestHeader](), decodeAs[DeleteAccessConfigRequestHeader](),
	decodeAs[UpdateGlobalWhiteAddrsConfigRequestHeader](),
	decodeAs[SendMessageResponseHeader](), decodeAs[PullMessageResponseHeader](),
	decodeAs[OffsetResponseHeader](), decodeAs[FastForwardResponseHeader](),
	decodeAs[RecallMessageResponseHeader](), decodeAs[GetKVConfigResponseHeader](),
	decodeAs[GetBrokerAclConfigResponseHeader](), decodeAs[QueryMessageResponseHeader](),
	decodeAs[RegisterBrokerResponseHeader](), decodeAs[QueryDataVersionResponseHeader](),
	decodeAs[WipeWritePermOfBrokerResponseHeader](), decodeAs[AddWritePermOfBrokerResponseHeader](),
	decodeAs[ChangeInvisibleTimeResponseHeader](), decodeAs[NotificationResponseHeader](),
	decodeAs[PollingInfoResponseHeader](), decodeAs[GetEarliestMsgStoretimeResponseHeader](),
	decodeAs[PopMessageResponseHeader](), decodeAs[NotifyConsumerIdsChangedRequestHeader](),
	decodeAs[CheckTransactionStateRequestHeader](),
	decodeAs[SendMessageRequestHeader](), decodeAs[SendMessageRequestHeaderV2](),
	decodeAs[ConsumerSendMsgBackRequestHeader](),
}

// TestAllHeadersListed: every type with a decodeHeader method in
// headers*.go is in allHeaders, so the fuzz target covers it.
func TestAllHeadersListed(t *testing.T) {
	files, _ := filepath.Glob("headers*.go")
	fset := token.NewFileSet()
	var defined []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "decodeHeader" || fd.Recv == nil {
				continue
			}
			defined = append(defined, fd.Recv.List[0].Type.(*ast.StarExpr).X.(*ast.Ident).Name)
		}
	}
	var listed []string
	for _, h := range allHeaders {
		listed = append(listed, h.name)
	}
	slices.Sort(defined)
	slices.Sort(listed)
	if !slices.Equal(defined, listed) {
		t.Fatalf("typed headers defined %v\nlisted in allHeaders %v", defined, listed)
	}
}

// A missing required field is the stock remark (RemotingCommandException's
// text) under SYSTEM_ERROR, and the first field in decode order is the one
// named; a number Java would not parse fails too; nullable fields stay
// absent.
func TestDecodeHeaderStockErrors(t *testing.T) {
	req := NewRequest(PullMessage, map[string]string{"topic": "T"}, nil)
	_, err := DecodeHeader[PullMessageRequestHeader](req)
	if !errors.Is(err, ErrMissingField) || err.Error() != "the custom field <consumerGroup> is null" {
		t.Fatalf("err = %v", err)
	}
	resp := ErrorResponse(req, err)
	if resp.Code != SystemError || resp.Remark != "the custom field <consumerGroup> is null" {
		t.Fatalf("response %d %q", resp.Code, resp.Remark)
	}

	req = NewRequest(GetMaxOffset, map[string]string{"topic": "T", "queueId": "1x"}, nil)
	if _, err := DecodeHeader[QueueRequestHeader](req); err == nil || errors.Is(err, ErrMissingField) {
		t.Fatalf("bad queueId: err = %v", err)
	}
	req = NewRequest(GetMaxOffset, map[string]string{"topic": "T", "queueId": "+7"}, nil) // Integer.parseInt takes a sign
	if q, err := DecodeHeader[QueueRequestHeader](req); err != nil || q.QueueID != 7 {
		t.Fatalf("queueId +7: %+v %v", q, err)
	}
	req = NewRequest(GetMaxOffset, map[string]string{"topic": "T", "queueId": "2147483648"}, nil)
	if _, err := DecodeHeader[QueueRequestHeader](req); err == nil {
		t.Fatal("queueId beyond int32 decoded")
	}

	req = NewRequest(ClockFastForward, map[string]string{"durationMs": "5"}, nil)
	if ff, err := DecodeHeader[FastForwardRequestHeader](req); err != nil || ff.TimeoutMs != nil || ff.DurationMs != 5 {
		t.Fatalf("fast forward: %+v %v", ff, err)
	}
	req = NewRequest(UnregisterClient, map[string]string{"clientID": "c", "consumerGroup": ""}, nil)
	if u, err := DecodeHeader[UnregisterClientRequestHeader](req); err != nil || u.ProducerGroup != nil || u.ConsumerGroup == nil {
		t.Fatalf("unregister: %+v %v", u, err)
	}
	req = NewRequest(UpdateAndCreateTopic, map[string]string{"topic": "T", "defaultTopic": "D", "readQueueNums": "4",
		"writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "order": "TRUE"}, nil)
	if c, err := DecodeHeader[CreateTopicRequestHeader](req); err != nil || !c.Order || c.ReadQueueNums != 4 {
		t.Fatalf("create topic: %+v %v", c, err)
	}
}

// FuzzDecodeHeaders: any extFields decode into every typed header without a
// panic; a decode that fails names a field in its error, and one that
// succeeds again on the same fields gives the same header.
func FuzzDecodeHeaders(f *testing.F) {
	f.Add([]byte("topic\x00T\x00queueId\x001\x00"))
	f.Add([]byte("consumerGroup\x00G\x00topic\x00T\x00queueId\x00-1\x00maxMsgNums\x0032\x00invisibleTime\x00x\x00"))
	f.Add([]byte("durationMs\x00\x00timeoutMs\x0099999999999999999999\x00"))
	f.Add([]byte("queueOffset\x00+\x00sysFlag\x002147483648\x00order\x00tRuE\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := map[string]string{}
		parts := bytes.Split(data, []byte{0})
		for i := 0; i+1 < len(parts) && i < 64; i += 2 {
			ext[string(parts[i])] = string(parts[i+1])
		}
		for _, h := range allHeaders {
			v, err := h.decode(&Command{ExtFields: ext})
			if err != nil {
				if !strings.Contains(err.Error(), "custom field <") {
					t.Fatalf("%s: error without a field name: %v", h.name, err)
				}
				continue
			}
			again, err := h.decode(&Command{ExtFields: ext})
			if err != nil || !reflect.DeepEqual(v, again) {
				t.Fatalf("%s: decode not repeatable: %+v %+v %v", h.name, v, again, err)
			}
		}
	})
}

// TestResponseHeadersRoundTrip: what a processor encodes, the client's
// decode reads back unchanged.
func TestResponseHeadersRoundTrip(t *testing.T) {
	type encoder interface{ Encode(*Command) }
	cases := []struct {
		in     encoder
		decode func(*Command) (any, error)
	}{
		{&FastForwardResponseHeader{BrokerTime: 1700000000000, ClockOffsetMs: -5}, decodeAs[FastForwardResponseHeader]().decode},
		{&RecallMessageResponseHeader{MsgID: "AC11"}, decodeAs[RecallMessageResponseHeader]().decode},
		{&GetKVConfigResponseHeader{Value: "v"}, decodeAs[GetKVConfigResponseHeader]().decode},
		{&GetBrokerAclConfigResponseHeader{Version: "{}", AllAclFileVersion: "{}", BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c"},
			decodeAs[GetBrokerAclConfigResponseHeader]().decode},
		{&QueryMessageResponseHeader{IndexLastUpdateTimestamp: 9, IndexLastUpdatePhyoffset: 8}, decodeAs[QueryMessageResponseHeader]().decode},
		{&RegisterBrokerResponseHeader{MasterAddr: "m:1"}, decodeAs[RegisterBrokerResponseHeader]().decode},
		{&QueryDataVersionResponseHeader{Changed: true}, decodeAs[QueryDataVersionResponseHeader]().decode},
		{&WipeWritePermOfBrokerResponseHeader{WipeTopicCount: 3}, decodeAs[WipeWritePermOfBrokerResponseHeader]().decode},
		{&AddWritePermOfBrokerResponseHeader{AddTopicCount: 4}, decodeAs[AddWritePermOfBrokerResponseHeader]().decode},
		{&ChangeInvisibleTimeResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 3}, decodeAs[ChangeInvisibleTimeResponseHeader]().decode},
		{&NotificationResponseHeader{HasMsg: true}, decodeAs[NotificationResponseHeader]().decode},
		{&PollingInfoResponseHeader{PollingNum: 7}, decodeAs[PollingInfoResponseHeader]().decode},
		{&PullMessageResponseHeader{NextBeginOffset: 5, MinOffset: 1, MaxOffset: 9}, decodeAs[PullMessageResponseHeader]().decode},
		{&PopMessageResponseHeader{PopTime: 1, InvisibleTime: 2, ReviveQid: 3, RestNum: 4, StartOffsetInfo: new(string), MsgOffsetInfo: new(string)},
			decodeAs[PopMessageResponseHeader]().decode},
		{&PopMessageResponseHeader{RestNum: 4}, decodeAs[PopMessageResponseHeader]().decode},
		{&OffsetResponseHeader{Offset: 12}, decodeAs[OffsetResponseHeader]().decode},
		{&GetEarliestMsgStoretimeResponseHeader{Timestamp: -1}, decodeAs[GetEarliestMsgStoretimeResponseHeader]().decode},
	}
	for _, tc := range cases {
		resp := NewResponse(NewRequest(0, nil, nil), Success, "")
		tc.in.Encode(resp)
		got, err := tc.decode(resp)
		if err != nil || !reflect.DeepEqual(got, reflect.ValueOf(tc.in).Elem().Interface()) {
			t.Errorf("%T: encoded %v, decoded %+v, %v", tc.in, resp.ExtFields, got, err)
		}
	}
	// Only the addresses that are known are written.
	resp := NewResponse(NewRequest(0, nil, nil), Success, "")
	(&RegisterBrokerResponseHeader{}).Encode(resp)
	if len(resp.ExtFields) != 0 {
		t.Errorf("empty REGISTER_BROKER answer wrote %v", resp.ExtFields)
	}
}

// TestRequestHeadersRoundTrip: what the admin client sends, the processor's
// decode reads back unchanged.
func TestRequestHeadersRoundTrip(t *testing.T) {
	type fielder interface{ Fields() map[string]string }
	s, ms := "x", int64(5)
	for _, in := range []fielder{
		&PutKVConfigRequestHeader{"ns", "k", "v"}, &KVConfigRequestHeader{"ns", "k"},
		&GetRouteInfoRequestHeader{Topic: "T", AcceptStandardJSONOnly: true},
		&DeleteTopicFromNamesrvRequestHeader{"T", "C"}, &TopicRequestHeader{"T"},
		&CreateTopicRequestHeader{Topic: "T", DefaultTopic: "D", ReadQueueNums: 4, WriteQueueNums: 8, Perm: 6,
			TopicFilterType: "SINGLE_TAG", TopicSysFlag: 1, Order: true, Attributes: "+a=b"},
		&PullMessageRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: 3, QueueOffset: 9, MaxMsgNums: 32, SysFlag: 2,
			CommitOffset: 7, SuspendTimeoutMillis: 15000, Subscription: "*", SubVersion: 1, ExpressionType: "TAG"},
		&QueueRequestHeader{"T", 2}, &SearchOffsetRequestHeader{"T", 2, 1700000000000}, &ViewMessageRequestHeader{123},
		&QueryTopicsByConsumerRequestHeader{"G"}, &QuerySubscriptionByConsumerRequestHeader{"G", &s},
		&QuerySubscriptionByConsumerRequestHeader{Group: "G"}, &UpdateGroupForbiddenRequestHeader{Group: "G", Topic: "T"},
		&UpdateGroupForbiddenRequestHeader{"G", "T", new(bool)},
		&UpdateConsumerOffsetRequestHeader{"G", "T", 1, 44},
		&QueryMessageRequestHeader{Topic: "T", Key: "k", MaxNum: 32, BeginTimestamp: 1, EndTimestamp: 2, UniqueKeyFlag: true},
		&RecallMessageRequestHeader{"T", "h", "P", "b"}, &ViewBrokerStatsDataRequestHeader{"TOPIC_PUT_NUMS", "T"},
		&GetConsumeStatsInBrokerHeader{true}, &FastForwardRequestHeader{DurationMs: 60000, TimeoutMs: &ms},
		&ConsumerGroupRequestHeader{"G"}, &DeleteSubscriptionGroupRequestHeader{"G", true},
		&GetConsumerRunningInfoRequestHeader{"G", "c"}, &GetConsumeStatsRequestHeader{"G", "T"},
		&ResetOffsetRequestHeader{"T", "G", -1, true}, &GetConsumerStatusRequestHeader{"T", "G", "c"},
		&CloneGroupOffsetRequestHeader{"A", "B", "T", true},
		&QueryConsumeQueueRequestHeader{Topic: "T", QueueID: 1, Index: 2, Count: 3, ConsumerGroup: &s},
		&CreateAccessConfigRequestHeader{AccessKey: "ak", SecretKey: &s, Admin: true, TopicPerms: &s},
		&RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c", HAServerAddr: "a:2", BrokerID: 0, BodyCrc32: 77},
		&BrokerIdentityRequestHeader{"b", "a:1", "c", 1}, &NotifyConsumerIdsChangedRequestHeader{"G"},
		&CheckTransactionStateRequestHeader{1, 2, "u", "u", "o"},
		&DeleteAccessConfigRequestHeader{"ak"}, &UpdateGlobalWhiteAddrsConfigRequestHeader{&s, "/p"},
	} {
		var h headerDecode
		for _, d := range allHeaders {
			if d.name == reflect.TypeOf(in).Elem().Name() {
				h = d
			}
		}
		got, err := h.decode(NewRequest(0, in.Fields(), nil))
		if err != nil || !reflect.DeepEqual(got, reflect.ValueOf(in).Elem().Interface()) {
			t.Errorf("%T: sent %v, decoded %+v, %v", in, in.Fields(), got, err)
		}
	}
}
