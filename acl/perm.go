package acl

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Permission bits (Permission.java).
const (
	PermDeny byte = 1
	PermAny  byte = 1 << 1
	PermPub  byte = 1 << 2
	PermSub  byte = 1 << 3
)

const (
	retryPrefix = message.RetryTopicPrefix
	traceTopic  = message.TopicTrace
)

// adminCodes is Permission.ADMIN_CODE: the only request codes that need an
// admin account. Every other code needs a known account and a good
// signature, plus the topic and group permissions resources names.
var adminCodes = []int32{
	remoting.UpdateAndCreateTopic,
	remoting.UpdateBrokerConfig,
	remoting.DeleteTopicInBroker,
	remoting.UpdateAndCreateSubscriptionGroup,
	remoting.DeleteSubscriptionGroup,
}

// NeedsAdmin reports whether code is one of Permission.ADMIN_CODE.
func NeedsAdmin(code int32) bool { return slices.Contains(adminCodes, code) }

// ParsePerm is Permission.parsePermFromString: PUB, SUB, PUB|SUB, SUB|PUB;
// anything else (and absent) is DENY.
func ParsePerm(s string) byte {
	switch strings.TrimSpace(s) {
	case "PUB":
		return PermPub
	case "SUB":
		return PermSub
	case "PUB|SUB", "SUB|PUB":
		return PermPub | PermSub
	}
	return PermDeny
}

// permits is Permission.checkPermission.
func permits(needed, owned byte) bool {
	if owned&PermDeny != 0 {
		return false
	}
	if needed&PermAny != 0 {
		return owned&(PermPub|PermSub) != 0
	}
	return needed&owned != 0
}

// checkResourcePerms is Permission.checkResourcePerms, run on the lists
// an UPDATE_AND_CREATE_ACL_CONFIG brings.
func checkResourcePerms(list []string) error {
	for _, r := range list {
		items := splitNonEmpty(r, "=")
		if len(items) != 2 {
			return fmt.Errorf("Parse Resource format error for %s.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB", r)
		}
		if strings.TrimSpace(items[1]) != "DENY" && ParsePerm(items[1]) == PermDeny {
			return fmt.Errorf("Parse resource permission error for %s.\nThe expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.", r)
		}
	}
	return nil
}

// resourcePerm is one resource a request touches: a topic, or a group as
// its retry topic, with the permission it needs.
type resourcePerm struct {
	resource string
	perm     byte
}

// resources collects what a request needs, as PlainAccessValidator.parse
// does, in the order Java's HashMap iterates them (which decides the
// resource a denial names).
type resources struct{ list []resourcePerm }

func (r *resources) add(resource string, present bool, perm byte) {
	if !present {
		return // Java's addResourceAndPerm(null, ...) adds nothing
	}
	for i := range r.list {
		if r.list[i].resource == resource {
			r.list[i].perm = perm
			return
		}
	}
	r.list = append(r.list, resourcePerm{resource, perm})
}

func (r *resources) addGroup(group string, present bool, perm byte) {
	r.add(retryPrefix+group, present, perm)
}

// hashOrder sorts the entries into java.util.HashMap iteration order:
// by bucket of the spread String.hashCode in a table sized for the
// entries, insertion order within a bucket.
func (r *resources) hashOrder() []resourcePerm {
	capacity := 16
	for len(r.list) > capacity*3/4 {
		capacity *= 2
	}
	out := slices.Clone(r.list)
	slices.SortStableFunc(out, func(a, b resourcePerm) int {
		return javaBucket(a.resource, capacity) - javaBucket(b.resource, capacity)
	})
	return out
}

func javaBucket(s string, capacity int) int {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	spread := uint32(h) ^ (uint32(h) >> 16)
	return int(spread & uint32(capacity-1))
}

// heartbeatBody is the part of HeartbeatData parse reads.
type heartbeatBody struct {
	ConsumerDataSet []struct {
		GroupName           *string `json:"groupName"`
		SubscriptionDataSet []struct {
			Topic *string `json:"topic"`
		} `json:"subscriptionDataSet"`
	} `json:"consumerDataSet"`
}

// requestResources is the switch of PlainAccessValidator.parse.
func requestResources(req *remoting.Command, ext map[string]string) (resources, error) {
	var r resources
	get := func(k string) (string, bool) { v, ok := ext[k]; return v, ok }
	switch req.Code {
	case remoting.SendMessage, remoting.SendMessageV2:
		topicKey, groupKey := "topic", "group" // SEND_MESSAGE reads "group", which the header does not have
		if req.Code == remoting.SendMessageV2 {
			topicKey, groupKey = "b", "a"
		}
		topic, ok := get(topicKey)
		if ok && strings.HasPrefix(topic, retryPrefix) {
			g, gok := get(groupKey)
			r.addGroup(g, gok, PermSub)
		} else {
			r.add(topic, ok, PermPub)
		}
	case remoting.ConsumerSendMsgBack:
		g, ok := get("group")
		r.addGroup(g, ok, PermSub)
	case remoting.PullMessage:
		t, ok := get("topic")
		r.add(t, ok, PermSub)
		g, gok := get("consumerGroup")
		r.addGroup(g, gok, PermSub)
	case remoting.QueryMessage:
		t, ok := get("topic")
		r.add(t, ok, PermSub)
	case remoting.HeartBeat:
		var hb heartbeatBody
		if err := remoting.UnmarshalBody(req.Body, &hb); err != nil {
			return r, err
		}
		for _, c := range hb.ConsumerDataSet {
			if c.GroupName != nil {
				r.addGroup(*c.GroupName, true, PermSub)
			}
			for _, s := range c.SubscriptionDataSet {
				if s.Topic != nil {
					r.add(*s.Topic, true, PermSub)
				}
			}
		}
	// The three below decode their header classes in Java, but 4.9.8's
	// decodeCommandCustomHeader logs and swallows a missing @CFNotNull field
	// or a bad number: an absent field just names no resource.
	case remoting.UnregisterClient, remoting.GetConsumerListByGroup:
		g, ok := get("consumerGroup")
		r.addGroup(g, ok, PermSub)
	case remoting.UpdateConsumerOffset:
		g, ok := get("consumerGroup")
		r.addGroup(g, ok, PermSub)
		t, tok := get("topic")
		r.add(t, tok, PermSub)
	}
	return r, nil
}
