package remoting

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rmqio/rmq/topicgroup"
)

func TestFlexInt64(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []FlexInt64
		wantErr bool
	}{
		{name: "numbers (Java)", in: `[1,-2,9223372036854775807]`, want: []FlexInt64{1, -2, 9223372036854775807}},
		{name: "strings (Go client)", in: `["12345","-7"]`, want: []FlexInt64{12345, -7}},
		{name: "null and empty string", in: `[null,""]`, want: []FlexInt64{0, 0}},
		{name: "float", in: `[2.0]`, want: []FlexInt64{2}},
		{name: "not a number", in: `["abc"]`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []FlexInt64
			err := UnmarshalBody([]byte(tc.in), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("UnmarshalBody(%s) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("UnmarshalBody(%s) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestHeartbeatBodies decodes HEART_BEAT bodies as the Java and Go clients
// write them (remoting-protocol.md §4.2).
func TestHeartbeatBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		code FlexInt64
	}{
		{
			name: "Java",
			body: `{"clientID":"10.0.0.1@1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"G","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}],"unitMode":false}],"producerDataSet":[{"groupName":"P"}]}`,
			code: 2598919,
		},
		{
			name: "Go",
			body: `{"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"P"}],"consumerDataSet":[{"groupName":"G","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T","subString":"TagA","classFilterMode":false,"tagsSet":["TagA"],"codeSet":["2598919"],"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`,
			code: 2598919,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hb HeartbeatData
			if err := UnmarshalBody([]byte(tc.body), &hb); err != nil {
				t.Fatal(err)
			}
			if hb.ClientID != "10.0.0.1@1" || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != "P" ||
				len(hb.ConsumerDataSet) != 1 {
				t.Fatalf("heartbeat %+v", hb)
			}
			cd := hb.ConsumerDataSet[0]
			if cd.GroupName != "G" || cd.ConsumeType != "CONSUME_PASSIVELY" || len(cd.SubscriptionDataSet) != 1 {
				t.Fatalf("consumer data %+v", cd)
			}
			sd := cd.SubscriptionDataSet[0]
			if sd.Topic != "T" || sd.SubString != "TagA" || !reflect.DeepEqual(sd.CodeSet, []FlexInt64{tc.code}) ||
				!reflect.DeepEqual(sd.TagsSet, []string{"TagA"}) || sd.ExpressionType != "TAG" {
				t.Fatalf("subscription %+v", sd)
			}
		})
	}
}

func TestMarshalBodyIsCompactAndSorted(t *testing.T) {
	body := string(MarshalBody(&BrokerData{BrokerName: "b", Cluster: "C", BrokerAddrs: map[int64]string{10: "x:3", 0: "x:1", 1: "x:2"}}))
	want := `{"brokerAddrs":{"0":"x:1","1":"x:2","10":"x:3"},"brokerName":"b","cluster":"C"}`
	if body != want {
		t.Fatalf("MarshalBody = %s, want %s", body, want)
	}
	if strings.ContainsAny(string(MarshalBody(topicgroup.NewSubscriptionGroupConfig("G"))), " \n") {
		t.Fatal("MarshalBody wrote whitespace")
	}
}
