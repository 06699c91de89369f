package clients

import (
	"strings"
	"testing"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Names that cannot be a group: the remark is Validators.checkGroup's.
var badGroups = []struct{ group, remark string }{
	{"../../../evil_grp", "the specified group[../../../evil_grp] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
	{"a b", "the specified group[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"},
	{strings.Repeat("g", 256), "the specified group is longer than group max length 255."},
}

func TestHeartbeatRefusesInvalidGroupNames(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("A")
	for _, bg := range badGroups {
		clExpectCode(t, c.heartbeat([]string{"ok", bg.group}, "T"), remoting.SystemError, bg.remark)
		hb := remoting.HeartbeatData{ClientID: "A", ProducerDataSet: []*remoting.ProducerData{{GroupName: bg.group}}}
		clExpectCode(t, c.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)), remoting.SystemError, bg.remark)
	}
	// Nothing of a refused heartbeat is registered, not even its valid group.
	if env.s.SubGroups.Find("ok") != nil || env.s.SubGroups.Find(badGroups[0].group) != nil || len(env.s.Consumers.ClientIDs("ok")) != 0 {
		t.Fatal("a refused heartbeat registered a group")
	}
	if env.topics.Get("%RETRY%ok") != nil {
		t.Fatal("a refused heartbeat created a retry topic")
	}
	// A group of 125 characters is valid (the Java client allows 255) and
	// may consume, but its retry topic would be longer than 127: none is made.
	long := strings.Repeat("g", 125)
	clExpectCode(t, c.heartbeat([]string{long}, "T"), remoting.Success, "")
	if env.s.SubGroups.Find(long) == nil || env.topics.Get("%RETRY%"+long) != nil {
		t.Fatal("125-character group: want its config and no retry topic")
	}
}

func TestUpdateAndCreateSubscriptionGroupRefusesInvalidNames(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("admin")
	for _, bg := range badGroups {
		cfg := topicgroup.NewSubscriptionGroupConfig(bg.group)
		clExpectCode(t, c.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, remoting.MarshalBody(cfg)), remoting.SystemError, bg.remark)
		clExpectCode(t, c.invoke(remoting.GetSubscriptionGroupConfig, map[string]string{"group": bg.group}, nil), remoting.SystemError, bg.remark)
		if env.s.SubGroups.Find(bg.group) != nil {
			t.Fatalf("group %q created", bg.group)
		}
		// The managers refuse them too, whoever calls.
		if env.s.SubGroups.FindOrCreate(bg.group) != nil || env.s.SubGroups.Update(cfg) == nil {
			t.Fatalf("manager accepted group %q", bg.group)
		}
	}
}

func TestUpdateConsumerOffsetRefusesInvalidNames(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	c := env.client("A")
	for _, bg := range badGroups {
		ext := map[string]string{"consumerGroup": bg.group, "topic": "T", "queueId": "0", "commitOffset": "1"}
		clExpectCode(t, c.invoke(remoting.UpdateConsumerOffset, ext, nil), remoting.SystemError, bg.remark)
	}
	ext := map[string]string{"consumerGroup": "G", "topic": "../x", "queueId": "0", "commitOffset": "1"}
	clExpectCode(t, c.invoke(remoting.UpdateConsumerOffset, ext, nil), remoting.SystemError,
		"The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
	if _, ok := env.s.Offsets.Query(badGroups[0].group, "T", 0); ok {
		t.Fatal("offset committed for an invalid group")
	}
	if _, ok := env.s.Offsets.Query("G", "../x", 0); ok {
		t.Fatal("offset committed for an invalid topic")
	}
}
