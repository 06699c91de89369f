package remoting

import (
	"fmt"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"

	"github.com/rmqio/rmq/topicgroup"
)

// Headers and bodies of the 5.3.3 batch and group admin codes
// (remoting/protocol/header/ and remoting/protocol/body/ of
// rocketmq-all-5.3.3). UPDATE_AND_CREATE_TOPIC_LIST's header
// (CreateTopicListRequestHeader) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
// carry nothing but the RpcRequestHeader extras, which no handler reads.

// QueryTopicsByConsumerRequestHeader is QUERY_TOPICS_BY_CONSUMER's.
type QueryTopicsByConsumerRequestHeader struct{ Group string }

func (r *QueryTopicsByConsumerRequestHeader) decodeHeader(h *Header) {
	r.Group = h.Str("group", true)
}

// QuerySubscriptionByConsumerRequestHeader is QUERY_SUBSCRIPTION_BY_CONSUMER's
// (topic is not @CFNotNull: absent, it is Java's null and finds nothing).
type QuerySubscriptionByConsumerRequestHeader struct {
	Group string
	Topic *string
}

func (r *QuerySubscriptionByConsumerRequestHeader) decodeHeader(h *Header) {
	r.Group = h.Str("group", true)
	r.Topic = h.OptStr("topic")
}

// UpdateGroupForbiddenRequestHeader is UPDATE_AND_GET_GROUP_FORBIDDEN's:
// Readable is a java.lang.Boolean, nil when absent (the request only reads
// the flag then).
type UpdateGroupForbiddenRequestHeader struct {
	Group    string
	Topic    string
	Readable *bool
}

func (r *UpdateGroupForbiddenRequestHeader) decodeHeader(h *Header) {
	r.Group = h.Str("group", true)
	r.Topic = h.Str("topic", true)
	if v := h.OptStr("readable"); v != nil {
		b := JavaBool(*v)
		r.Readable = &b
	}
}

// CreateTopicListRequestBody is UPDATE_AND_CREATE_TOPIC_LIST's body.
type CreateTopicListRequestBody struct {
	TopicConfigList []*topicgroup.TopicConfig `json:"topicConfigList"`
}

// SubscriptionGroupList is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST's body.
// The configs stay raw so that each one decodes over the stock defaults, as
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's body does.
type SubscriptionGroupList struct {
	GroupConfigList []jsoniter.RawMessage `json:"groupConfigList"`
}

// QuerySubscriptionResponseBody is QUERY_SUBSCRIPTION_BY_CONSUMER's answer;
// SubscriptionData is absent when the group has none for the topic.
type QuerySubscriptionResponseBody struct {
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData,omitempty"`
	Topic            *string           `json:"topic,omitempty"`
}

// GroupForbidden is UPDATE_AND_GET_GROUP_FORBIDDEN's answer.
type GroupForbidden struct {
	Group    string `json:"group"`
	Readable bool   `json:"readable"`
	Topic    string `json:"topic"`
}

// Fields returns the header as extFields.
func (r *QueryTopicsByConsumerRequestHeader) Fields() map[string]string {
	return map[string]string{"group": r.Group}
}

// Fields returns the header as extFields.
func (r *QuerySubscriptionByConsumerRequestHeader) Fields() map[string]string {
	m := map[string]string{"group": r.Group}
	setPtr(m, "topic", r.Topic)
	return m
}

// Fields returns the header as extFields (readable only when set).
func (r *UpdateGroupForbiddenRequestHeader) Fields() map[string]string {
	m := map[string]string{"group": r.Group, "topic": r.Topic}
	if r.Readable != nil {
		m["readable"] = strconv.FormatBool(*r.Readable)
	}
	return m
}

// SubscriptionGroupListBody is the SubscriptionGroupList a sender writes.
type SubscriptionGroupListBody struct {
	GroupConfigList []*topicgroup.SubscriptionGroupConfig `json:"groupConfigList"`
}

// DecodeListBody reads a 5.x batch admin body, {"<key>":[...]}
// (CreateTopicListRequestBody, SubscriptionGroupList), into its elements,
// still raw so that each decodes over its type's stock defaults. It refuses
// a body over limit bytes, one that is not JSON (nesting is bounded by the
// decoder, UnmarshalBody), one without the list (Java's null, which the
// stock handler fails on) and a null element.
func DecodeListBody(body []byte, key string, limit int) ([]jsoniter.RawMessage, error) {
	if len(body) > limit {
		return nil, fmt.Errorf("body of %d bytes exceeds %d", len(body), limit)
	}
	var m map[string]jsoniter.RawMessage
	if err := UnmarshalBody(body, &m); err != nil {
		return nil, fmt.Errorf("bad body: %w", err)
	}
	var list []jsoniter.RawMessage
	if raw, ok := m[key]; ok {
		if err := UnmarshalBody(raw, &list); err != nil {
			return nil, fmt.Errorf("bad body: %w", err)
		}
	}
	if list == nil {
		return nil, fmt.Errorf("the body has no %s", key)
	}
	for _, r := range list {
		if t := strings.TrimSpace(string(r)); t == "" || t == "null" {
			return nil, fmt.Errorf("a null element of %s", key)
		}
	}
	return list, nil
}
