package grpcapi

import (
	"context"
	"errors"
	"strings"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
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

// routeQueues lists one broker instance's queues of the topic as the proxy
// does (RouteActivity.genMessageQueueFromQueueData): ids renumbered from 0,
// read-only queues first, then write-only, then read-write; a group
// neither readable nor writable gets max(1, its queue counts) NONE queues.
func routeQueues(out []*v2.MessageQueue, topic *v2.Resource, qd *broker.RouteQueue, br *v2.Broker, accept []v2.MessageType) []*v2.MessageQueue {
	var ro, wo, rw, none int32
	readable, writable := qd.Perm&topicgroup.PermRead != 0, qd.Perm&topicgroup.PermWrite != 0
	switch {
	case readable && writable:
		rw = min(qd.ReadQueueNums, qd.WriteQueueNums)
		ro, wo = qd.ReadQueueNums-rw, qd.WriteQueueNums-rw
	case writable:
		wo = qd.WriteQueueNums
	case readable:
		ro = qd.ReadQueueNums
	default:
		none = max(1, qd.ReadQueueNums, qd.WriteQueueNums)
	}
	var id int32
	add := func(n int32, p v2.Permission) {
		for range n {
			out = append(out, &v2.MessageQueue{Topic: topic, Id: id, Permission: p, Broker: br, AcceptMessageTypes: accept})
			id++
		}
	}
	add(ro, v2.Permission_READ)
	add(wo, v2.Permission_WRITE)
	add(rw, v2.Permission_READ_WRITE)
	add(none, v2.Permission_NONE)
	return out
}

// permission is RouteActivity.convertToPermission.
func permission(perm int32) v2.Permission {
	readable, writable := perm&topicgroup.PermRead != 0, perm&topicgroup.PermWrite != 0
	switch {
	case readable && writable:
		return v2.Permission_READ_WRITE
	case readable:
		return v2.Permission_READ
	case writable:
		return v2.Permission_WRITE
	}
	return v2.Permission_NONE
}

// topicRoute is the topic's route across the cluster (cluster_route.go):
// every broker group serving it with its instances, and the message types
// its queues accept. The topic config of this broker decides the types; a
// topic this broker lacks accepts every kind here (the stock local proxy
// would say UNSPECIFIED, which makes an SDK that validates types refuse
// every send; the owning broker checks the kind itself).
func (s *Server) topicRoute(ctx context.Context, r *v2.Resource) ([]routeGroup, []v2.MessageType, error) {
	name, err := s.topicName(r)
	if err != nil {
		return nil, nil, err
	}
	tc := s.b.Topics().Get(name)
	rd, err := s.clusterRoute(ctx, name)
	if err != nil && !errors.Is(err, broker.ErrNoRoute) {
		return nil, nil, err
	}
	groups := s.routeGroups(rd, tc)
	if len(groups) == 0 {
		return nil, nil, fail(v2.Code_TOPIC_NOT_FOUND, "topic not found: "+name)
	}
	accept := acceptAll
	if tc != nil {
		accept = acceptTypes(tc)
	}
	return groups, accept, nil
}

// QueryRoute answers the topic's queues on every broker of the cluster
// that serves it (RouteActivity.queryRoute), each with its broker's
// endpoint.
func (s *Server) QueryRoute(ctx context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	groups, accept, err := s.topicRoute(ctx, req.GetTopic())
	if err != nil {
		return &v2.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	topic := &v2.Resource{ResourceNamespace: req.GetTopic().GetResourceNamespace(), Name: req.GetTopic().GetName()}
	var out []*v2.MessageQueue
	for _, g := range groups {
		for _, rb := range g.brokers {
			br := &v2.Broker{Name: rb.name, Id: int32(rb.id), Endpoints: rb.ep}
			out = routeQueues(out, topic, &g.qd, br, accept)
		}
	}
	return &v2.QueryRouteResponse{Status: okStatus(), MessageQueues: out}, nil
}

// QueryAssignment answers the queues a push consumer of the group reads
// (RouteActivity.queryAssignment): one per readable broker group's master,
// with id -1 (the broker picks), or FORBIDDEN when no group has a readable
// queue.
func (s *Server) QueryAssignment(ctx context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	if _, err := s.topicName(req.GetTopic()); err != nil {
		return &v2.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	if err := checkGroup(req.GetGroup()); err != nil {
		return &v2.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	groups, accept, err := s.topicRoute(ctx, req.GetTopic())
	if err != nil {
		return &v2.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	topic := &v2.Resource{ResourceNamespace: req.GetTopic().GetResourceNamespace(), Name: req.GetTopic().GetName()}
	var as []*v2.Assignment
	for _, g := range groups {
		if g.qd.Perm&topicgroup.PermRead == 0 || g.qd.ReadQueueNums <= 0 {
			continue
		}
		for _, rb := range g.brokers {
			if rb.id != masterID {
				continue
			}
			mq := &v2.MessageQueue{
				Topic: topic, Id: -1, Permission: permission(g.qd.Perm),
				Broker: &v2.Broker{Name: rb.name, Id: int32(rb.id), Endpoints: rb.ep}, AcceptMessageTypes: accept,
			}
			as = append(as, &v2.Assignment{MessageQueue: mq})
		}
	}
	if len(as) == 0 {
		return &v2.QueryAssignmentResponse{Status: toStatus(fail(v2.Code_FORBIDDEN, "no readable queue"))}, nil
	}
	return &v2.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}

// masterID is MixAll.MASTER_ID.
const masterID = 0

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
