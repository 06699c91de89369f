package grpcapi

import (
	"context"
	"strings"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/topicgroup"
)

// acceptAll is what a MIXED topic's queues accept.
var acceptAll = []v2.MessageType{v2.MessageType_NORMAL, v2.MessageType_FIFO, v2.MessageType_DELAY, v2.MessageType_TRANSACTION}

// acceptTypes is what the topic's queues accept, after its message.type
// (RouteActivity.parseTopicMessageType). A topic without the attribute
// accepts every kind, as before 5.x topic types: the proxy would say
// NORMAL, but the SDKs check the list only when the Settings ask them to
// (validate_message_type, on with enableTopicMessageTypeCheck), and the
// broker then checks such a topic as NORMAL itself.
func acceptTypes(tc *topicgroup.TopicConfig) []v2.MessageType {
	if _, typed := tc.Attributes[message.AttrMessageType]; !typed {
		return acceptAll
	}
	switch message.TopicMessageTypeOf(tc.Attributes) {
	case message.TopicTypeNormal:
		return []v2.MessageType{v2.MessageType_NORMAL}
	case message.TopicTypeFIFO:
		return []v2.MessageType{v2.MessageType_FIFO}
	case message.TopicTypeDelay:
		return []v2.MessageType{v2.MessageType_DELAY}
	case message.TopicTypeTransaction:
		return []v2.MessageType{v2.MessageType_TRANSACTION}
	case message.TopicTypeMixed:
		return acceptAll
	default:
		return []v2.MessageType{v2.MessageType_MESSAGE_TYPE_UNSPECIFIED}
	}
}

// topicConfig checks the topic name and returns its config: ILLEGAL_TOPIC
// for a bad or system topic, TOPIC_NOT_FOUND for one that does not exist.
func (s *Server) topicConfig(r *v2.Resource) (*topicgroup.TopicConfig, error) {
	name, err := s.topicName(r)
	if err != nil {
		return nil, err
	}
	tc := s.b.Topics().Get(name)
	if tc == nil {
		return nil, fail(v2.Code_TOPIC_NOT_FOUND, "topic not found: "+name)
	}
	return tc, nil
}

// topicName is r's name if it may name a topic a client uses
// (GrpcValidator.validateTopic): not empty, legal, not a system topic.
func (s *Server) topicName(r *v2.Resource) (string, error) {
	name := r.GetName()
	if name == "" {
		return "", fail(v2.Code_ILLEGAL_TOPIC, "topic name cannot be empty")
	}
	if err := message.ValidateTopic(name); err != nil {
		return "", fail(v2.Code_ILLEGAL_TOPIC, "topic name is illegal: "+err.Error())
	}
	if s.b.Topics().IsSystemTopic(name) {
		return "", fail(v2.Code_ILLEGAL_TOPIC, "cannot access system topic: "+name)
	}
	return name, nil
}

func (s *Server) brokerProto() *v2.Broker {
	return &v2.Broker{Name: s.b.Options().BrokerName, Id: 0, Endpoints: s.endpoint()}
}

// routeQueues lists the topic's queues as the proxy does
// (ProxyTopicRouteData / RouteActivity.genMessageQueueFromQueueData): ids
// renumbered from 0, read-only queues first, then write-only, then
// read-write; a topic neither readable nor writable gets one NONE queue.
func (s *Server) routeQueues(r *v2.Resource, tc *topicgroup.TopicConfig) []*v2.MessageQueue {
	var ro, wo, rw int32
	readable, writable := tc.Perm&topicgroup.PermRead != 0, tc.Perm&topicgroup.PermWrite != 0
	switch {
	case readable && writable:
		rw = min(tc.ReadQueueNums, tc.WriteQueueNums)
		ro, wo = tc.ReadQueueNums-rw, tc.WriteQueueNums-rw
	case writable:
		wo = tc.WriteQueueNums
	case readable:
		ro = tc.ReadQueueNums
	}
	br := s.brokerProto()
	topic := &v2.Resource{ResourceNamespace: r.GetResourceNamespace(), Name: tc.TopicName}
	var out []*v2.MessageQueue
	accept := acceptTypes(tc)
	add := func(n int32, p v2.Permission) {
		for range n {
			out = append(out, &v2.MessageQueue{Topic: topic, Id: int32(len(out)), Permission: p, Broker: br, AcceptMessageTypes: accept})
		}
	}
	add(ro, v2.Permission_READ)
	add(wo, v2.Permission_WRITE)
	add(rw, v2.Permission_READ_WRITE)
	if len(out) == 0 {
		add(1, v2.Permission_NONE)
	}
	return out
}

// QueryRoute answers the topic's queues, all on this endpoint.
func (s *Server) QueryRoute(_ context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	tc, err := s.topicConfig(req.GetTopic())
	if err != nil {
		return &v2.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	return &v2.QueryRouteResponse{Status: okStatus(), MessageQueues: s.routeQueues(req.GetTopic(), tc)}, nil
}

// QueryAssignment answers the queues a push consumer of the group reads
// (QueryAssignmentActivity): one per broker with id -1 (the broker picks),
// or FORBIDDEN when the topic has no readable queue.
func (s *Server) QueryAssignment(_ context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	if err := checkGroup(req.GetGroup()); err != nil {
		return &v2.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	tc, err := s.topicConfig(req.GetTopic())
	if err != nil {
		return &v2.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	if tc.Perm&topicgroup.PermRead == 0 || tc.ReadQueueNums <= 0 {
		return &v2.QueryAssignmentResponse{Status: toStatus(fail(v2.Code_FORBIDDEN, "no readable queue"))}, nil
	}
	mq := &v2.MessageQueue{
		Topic: &v2.Resource{ResourceNamespace: req.GetTopic().GetResourceNamespace(), Name: tc.TopicName},
		Id:    -1, Permission: v2.Permission_READ_WRITE, Broker: s.brokerProto(), AcceptMessageTypes: acceptTypes(tc),
	}
	if tc.Perm&topicgroup.PermWrite == 0 {
		mq.Permission = v2.Permission_READ
	}
	return &v2.QueryAssignmentResponse{Status: okStatus(), Assignments: []*v2.Assignment{{MessageQueue: mq}}}, nil
}

// sysConsumerGroupPrefix is MixAll.CID_RMQ_SYS_PREFIX.
const sysConsumerGroupPrefix = message.SysGroupPrefix

// checkGroup validates a consumer group name (GrpcValidator
// validateConsumerGroup: ILLEGAL_CONSUMER_GROUP).
func checkGroup(r *v2.Resource) error {
	if err := message.ValidateGroup(r.GetName()); err != nil {
		return fail(v2.Code_ILLEGAL_CONSUMER_GROUP, "consumer group is illegal: "+err.Error())
	}
	if strings.HasPrefix(r.GetName(), sysConsumerGroupPrefix) {
		return fail(v2.Code_ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
	}
	return nil
}
