package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// The 5.3.3 batch and group requests of DefaultMQAdminExt: topic and group
// lists (mqadmin updateTopicList, updateSubGroupList), a group's topics
// and subscription, and its read ban on a topic.

// UpdateTopicList sends UPDATE_AND_CREATE_TOPIC_LIST with the configs to the
// broker at addr or, when addr is "", to every master of cluster, and
// returns the brokers updated (DefaultMQAdminExt.createAndUpdateTopicConfigList).
func (a *Admin) UpdateTopicList(ctx context.Context, addr, cluster string, configs []*topicgroup.TopicConfig) ([]string, error) {
	body := remoting.MarshalBody(&remoting.CreateTopicListRequestBody{TopicConfigList: configs})
	return a.callMasters(ctx, addr, cluster, func() *remoting.Command {
		return newRequest(remoting.UpdateAndCreateTopicList, nil, body)
	})
}

// UpdateSubGroupList sends UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST with the
// configs to the broker at addr or to every master of cluster
// (createAndUpdateSubscriptionGroupConfigList).
func (a *Admin) UpdateSubGroupList(ctx context.Context, addr, cluster string, configs []*topicgroup.SubscriptionGroupConfig) ([]string, error) {
	body := remoting.MarshalBody(&remoting.SubscriptionGroupListBody{GroupConfigList: configs})
	return a.callMasters(ctx, addr, cluster, func() *remoting.Command {
		return newRequest(remoting.UpdateAndCreateSubscriptionGroupList, nil, body)
	})
}

// QueryTopicsByConsumer asks every broker of the route of the group's retry
// topic for the topics the group has offsets for (QUERY_TOPICS_BY_CONSUMER)
// and returns their union, sorted (DefaultMQAdminExt.queryTopicsByConsumer,
// whose answer has no broker address).
func (a *Admin) QueryTopicsByConsumer(ctx context.Context, group string) (*remoting.TopicList, error) {
	route, err := a.Route(ctx, message.RetryTopic(group))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := &remoting.TopicList{TopicList: []string{}}
	for _, bd := range route.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.QueryTopicsByConsumer, (&remoting.QueryTopicsByConsumerRequestHeader{Group: group}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			return nil, err
		}
		var tl remoting.TopicList
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &tl); err != nil {
			return nil, err
		}
		for _, t := range tl.TopicList {
			if !seen[t] {
				seen[t] = true
				out.TopicList = append(out.TopicList, t)
			}
		}
	}
	sort.Strings(out.TopicList)
	return out, nil
}

// QuerySubscription asks the first broker of the topic's route for the
// group's subscription of it (QUERY_SUBSCRIPTION_BY_CONSUMER); nil when the
// group has none there (DefaultMQAdminExt.querySubscription).
func (a *Admin) QuerySubscription(ctx context.Context, group, topic string) (*remoting.SubscriptionData, error) {
	route, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, bd := range route.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.QuerySubscriptionByConsumer, (&remoting.QuerySubscriptionByConsumerRequestHeader{Group: group, Topic: &topic}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			return nil, err
		}
		var body remoting.QuerySubscriptionResponseBody
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
			return nil, err
		}
		return body.SubscriptionData, nil
	}
	return nil, nil
}

// UpdateGroupForbidden sends UPDATE_AND_GET_GROUP_FORBIDDEN to the broker at
// addr: with readable non-nil it lets the group read the topic or bans it
// from doing so; either way it answers whether the group may read
// (DefaultMQAdminExt.updateAndGetGroupReadForbidden).
func (a *Admin) UpdateGroupForbidden(ctx context.Context, addr, group, topic string, readable *bool) (*remoting.GroupForbidden, error) {
	hdr := remoting.UpdateGroupForbiddenRequestHeader{Group: group, Topic: topic, Readable: readable}
	req := newRequest(remoting.UpdateAndGetGroupForbidden, hdr.Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var gf remoting.GroupForbidden
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &gf); err != nil {
		return nil, err
	}
	return &gf, nil
}

// ParseTopicConfigList reads the file of mqadmin updateTopicList: a JSON
// array of TopicConfig, each over the Java field initialisers.
func ParseTopicConfigList(b []byte) ([]*topicgroup.TopicConfig, error) {
	return parseList(b, "topic config", func() *topicgroup.TopicConfig { return topicgroup.NewTopicConfig("") })
}

// ParseSubGroupConfigList reads the file of mqadmin updateSubGroupList: a
// JSON array of SubscriptionGroupConfig, each over the stock defaults.
func ParseSubGroupConfigList(b []byte) ([]*topicgroup.SubscriptionGroupConfig, error) {
	return parseList(b, "group config", func() *topicgroup.SubscriptionGroupConfig { return topicgroup.NewSubscriptionGroupConfig("") })
}

// parseList decodes a fastjson array, each element over what fresh returns.
func parseList[T any](b []byte, what string, fresh func() *T) ([]*T, error) {
	var raw []json.RawMessage
	if err := fastjson.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s list: %v", ErrUsage, what, err)
	}
	out := make([]*T, 0, len(raw))
	for _, r := range raw {
		v := fresh()
		if err := fastjson.Unmarshal(r, v); err != nil {
			return nil, fmt.Errorf("%w: %s %s: %v", ErrUsage, what, r, err)
		}
		out = append(out, v)
	}
	return out, nil
}
