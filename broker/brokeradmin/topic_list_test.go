package brokeradmin_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// UPDATE_AND_CREATE_TOPIC_LIST: configs over the Java field initialisers,
// the 5.3.3 checks in order with their codes, stock's "equal config answers
// at once" shortcut, attribute modifications, and hostile bodies refused
// with nothing changed.
func TestUpdateAndCreateTopicList(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	topic := func(name string) *topicgroup.TopicConfig {
		t.Helper()
		resp := tb.Invoke(remoting.GetTopicConfig, map[string]string{"topic": name}, nil)
		if resp.Code != remoting.Success {
			return nil
		}
		var tc topicgroup.TopicConfig
		if err := remoting.UnmarshalBody(resp.Body, &tc); err != nil {
			t.Fatal(err)
		}
		return &tc
	}
	expect := func(body string, code int32, remark string) {
		t.Helper()
		resp := tb.Invoke(remoting.UpdateAndCreateTopicList, nil, []byte(body))
		if resp.Code != code || !strings.Contains(resp.Remark, remark) {
			t.Fatalf("body %.100q: %d %q, want %d %q", body, resp.Code, resp.Remark, code, remark)
		}
	}
	expect(`{"topicConfigList":[{"topicName":"LA","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicFilterType":"MULTI_TAG"},`+
		`{"topicName":"LB","attributes":{"+message.type":"FIFO"}}]}`, remoting.Success, "")
	if got, want := topic("LA"), (&topicgroup.TopicConfig{TopicName: "LA", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "MULTI_TAG"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("LA = %+v", got)
	}
	if got, want := topic("LB"), (&topicgroup.TopicConfig{TopicName: "LB", ReadQueueNums: 16, WriteQueueNums: 16, Perm: 6, TopicFilterType: "SINGLE_TAG",
		Attributes: map[string]string{"message.type": "FIFO"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("LB = %+v", got)
	}

	// LA unchanged: the answer comes before LC is looked at (stock's bug).
	expect(`{"topicConfigList":[{"topicName":"LA","readQueueNums":2,"writeQueueNums":2,"perm":6,"topicFilterType":"MULTI_TAG"},{"topicName":"LC"}]}`,
		remoting.Success, "")
	if topic("LC") != nil {
		t.Fatal("LC created after an unchanged config")
	}

	for _, c := range []struct {
		body   string
		code   int32
		remark string
	}{
		{`{"topicConfigList":[{"topicName":"LD"},{"topicName":"a/b"}]}`, remoting.InvalidParameter, "The specified topic contains illegal characters"},
		{`{"topicConfigList":[{"topicName":"LD"},{"topicName":""}]}`, remoting.InvalidParameter, "The specified topic is blank."},
		{`{"topicConfigList":[{"topicName":"LD"},{"topicName":"SCHEDULE_TOPIC_XXXX"}]}`, remoting.InvalidParameter, "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic."},
		{`{"topicConfigList":[{"topicName":"LD","attributes":{"+message.type":"MIXED"}}]}`, remoting.InvalidParameter, "MIXED message type is not supported."},
		{`{"topicConfigList":[{"topicName":"LD"},{"topicName":"LB","attributes":{"+queue.type":"x"}}]}`, remoting.SystemError, "unsupported key: queue.type"},
		{`{"topicConfigList":[{"topicName":"LD","topicFilterType":"SQL"}]}`, remoting.SystemError, "TopicFilterType"},
		{`{"topicConfigList":[{"topicName":"LD"},null]}`, remoting.SystemError, "a null element of topicConfigList"},
		{`{"topicConfigList":[{"topicName":"LD","perm":"rw"}]}`, remoting.SystemError, "bad topic config"},
		{`{}`, remoting.SystemError, "no topicConfigList"},
		{``, remoting.SystemError, "bad body"},
		{`{"topicConfigList":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, remoting.SystemError, "bad body"},
		{`{"topicConfigList":[` + strings.Repeat(`{"topicName":"LD"},`, 4<<20/18) + `{"topicName":"LD"}]}`, remoting.SystemError, "exceeds"},
	} {
		expect(c.body, c.code, c.remark)
	}
	if topic("LD") != nil {
		t.Fatal("a refused list created LD")
	}
	expect(`{"topicConfigList":[]}`, remoting.Success, "")
}
