package broker

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// One send-back blocks a delay level for every topic, permanently: a group
// whose retry topic cannot be stored must be refused before anything is
// parked on a delay level.
func TestSendBackRefusesGroupsWhoseRetryTopicCannotBeStored(t *testing.T) {
	tb, _ := startDelayBroker(t)
	msgID := tb.mustSend(sendArgs{topic: "Work", body: []byte("job")}).ExtFields["msgId"]
	for _, tc := range []struct{ group, remark string }{
		{strings.Repeat("g", 125), "The specified topic is longer than topic max length."},
		{strings.Repeat("g", 256), "the specified group is longer than group max length 255."},
		{"../../../evil_grp", "the specified group[../../../evil_grp] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
	} {
		for _, level := range []int{0, 1, -1} {
			r := tb.sendBack(msgID, tc.group, level, "16")
			if r.Code != remoting.SystemError || r.Remark != tc.remark {
				t.Fatalf("group %.20q… level %d: code %d %q, want %d %q", tc.group, level, r.Code, r.Remark, remoting.SystemError, tc.remark)
			}
		}
		if tb.Topics().Get(message.RetryTopic(tc.group)) != nil || tb.Topics().Get(message.DLQTopic(tc.group)) != nil {
			t.Fatalf("group %.20q…: retry or DLQ topic created", tc.group)
		}
	}
	for level := int32(0); level < 18; level++ {
		if n := len(tb.messagesOn(message.TopicSchedule, level)); n != 0 {
			t.Fatalf("delay level %d holds %d messages", level+1, n)
		}
	}
	// The longest group whose retry topic fits still works.
	fits := strings.Repeat("g", message.MaxTopicLength-len(message.RetryTopicPrefix))
	if r := tb.sendBack(msgID, fits, 1, "16"); r.Code != remoting.Success {
		t.Fatalf("120-character group: %d %q", r.Code, r.Remark)
	}
}

func TestPullRefusesInvalidGroupNames(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "PullNames", body: []byte("x")})
	r := tb.pull(pullArgs{group: "../../evil", topic: "PullNames", maxMsgs: 1})
	if r.Code != remoting.SystemError || !strings.Contains(r.Remark, "contains illegal characters") {
		t.Fatalf("pull: %d %q", r.Code, r.Remark)
	}
	if tb.clients.SubGroups.Find("../../evil") != nil {
		t.Fatal("pull created the group")
	}
}

func TestUpdateAndCreateTopicRefusesInvalidNames(t *testing.T) {
	tb := startBroker(t, nil)
	for _, tc := range []struct{ topic, remark string }{
		{"../../evil", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
		{strings.Repeat("t", 128), "The specified topic is longer than topic max length."},
	} {
		r := tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt(tc.topic, 1, 6, "SINGLE_TAG"), nil)
		if r.Code != remoting.SystemError || r.Remark != tc.remark {
			t.Fatalf("%q: %d %q", tc.topic, r.Code, r.Remark)
		}
		if tb.Topics().Get(tc.topic) != nil {
			t.Fatalf("%q created", tc.topic)
		}
	}
	// Internal creation paths refuse them as well.
	if tc, _ := tb.Topics().CreateSystemTopic("%DLQ%"+strings.Repeat("g", 125), 1, 6); tc != nil {
		t.Fatal("CreateSystemTopic made a topic longer than 127")
	}
}
