package grpcapi

import (
	"context"
	"errors"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/auth"
	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// ACL on the gRPC endpoint. With aclEnable every request is checked
// against the broker's plain_acl.yml (the same acl.Manager the remoting
// port uses) before it is handled, as the 5.x proxy ran the plain ACL in
// its AuthenticationInterceptor: the request names its topics and groups
// (PlainAccessResource.parse(GeneratedMessageV3, ...), need below), the
// 5.x SDKs sign the call in its metadata (acl.CheckGrpc), the peer address
// is what white addresses match.
//
// A refusal is answered as the 5.3.3 proxy answers an authentication or
// authorization failure (ResponseBuilder.buildStatus): the RPC's own
// response with status UNAUTHORIZED and the reason as its message; a
// stream gets that one response and ends. (The 5.0-5.2 proxy closed the
// call with the gRPC status PERMISSION_DENIED instead; the SDKs read the
// 5.3.3 answer as an UnauthorizedException.) The check runs before
// anything else, the client id check included, as the proxy's pipeline
// runs before validateContext.
//
// Resources are named by Resource.name alone: rmq serves no namespaces
// (a topic is looked up by its name), so the name checked is the name used.

// authorize checks req of ctx's call; nil allows it.
func (s *Server) authorize(ctx context.Context, req proto.Message) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if m := s.b.ACL(); m != nil {
		n, err := need(req)
		if err != nil {
			return err
		}
		if err := m.CheckGrpc(peerAddr(ctx).String(), first(md, acl.GrpcAuthorization), first(md, acl.GrpcDateTime), n); err != nil {
			return err
		}
	}
	if a := s.b.Auth(); a.Checks() {
		// rpcCode is the message's stock full name (whitelists name it so).
		rpc := "apache.rocketmq.v2." + string(req.ProtoReflect().Descriptor().Name())
		return a.CheckGrpc(peerAddr(ctx).String(), rpc, first(md, acl.GrpcAuthorization), first(md, acl.GrpcDateTime),
			func(ip string) ([]auth.Request, error) { return need2(req, ip) })
	}
	return nil
}

// need2 is what ACL 2.0 authorizes of a gRPC request
// (DefaultAuthorizationContextBuilder.build(Metadata, message) of 5.3.3):
// a blank topic or group is refused.
func need2(req proto.Message, ip string) ([]auth.Request, error) {
	var out []auth.Request
	add := func(kind string, r *v2.Resource, acts ...string) error {
		name := r.GetName()
		if strings.TrimSpace(name) == "" {
			return &auth.Denied{Msg: kind + " is null."}
		}
		res := auth.Topic(name)
		if kind == "group" {
			res = auth.Group(name)
		}
		out = append(out, auth.Request{Resource: res, Actions: acts, SourceIP: ip})
		return nil
	}
	sub := func(group, topic *v2.Resource) error {
		if err := add("group", group, auth.ActSub); err != nil {
			return err
		}
		return add("topic", topic, auth.ActSub)
	}
	var err error
	switch r := req.(type) {
	case *v2.SendMessageRequest:
		if len(r.GetMessages()) == 0 {
			return nil, &auth.Denied{Msg: "message is null."}
		}
		err = add("topic", r.GetMessages()[0].GetTopic(), auth.ActPub)
	case *v2.RecallMessageRequest:
		err = add("topic", r.GetTopic(), auth.ActPub)
	case *v2.EndTransactionRequest:
		err = add("topic", r.GetTopic(), auth.ActPub)
	case *v2.HeartbeatRequest:
		switch r.GetClientType() {
		case v2.ClientType_PUSH_CONSUMER, v2.ClientType_SIMPLE_CONSUMER, v2.ClientType_PULL_CONSUMER:
			err = add("group", r.GetGroup(), auth.ActSub)
		}
	case *v2.ReceiveMessageRequest:
		if r.MessageQueue == nil {
			return nil, &auth.Denied{Msg: "messageQueue is null."}
		}
		err = sub(r.GetGroup(), r.GetMessageQueue().GetTopic())
	case *v2.AckMessageRequest:
		err = sub(r.GetGroup(), r.GetTopic())
	case *v2.ForwardMessageToDeadLetterQueueRequest:
		err = sub(r.GetGroup(), r.GetTopic())
	case *v2.NotifyClientTerminationRequest:
		if strings.TrimSpace(r.GetGroup().GetName()) != "" {
			err = add("group", r.GetGroup(), auth.ActSub)
		}
	case *v2.ChangeInvisibleDurationRequest:
		err = add("group", r.GetGroup(), auth.ActSub)
	case *v2.QueryRouteRequest:
		err = add("topic", r.GetTopic(), auth.ActPub, auth.ActSub)
	case *v2.QueryAssignmentRequest:
		err = sub(r.GetGroup(), r.GetTopic())
	case *v2.TelemetryCommand:
		st, ok := r.GetCommand().(*v2.TelemetryCommand_Settings)
		if !ok {
			break
		}
		pub, subs := st.Settings.GetPublishing(), st.Settings.GetSubscription()
		if pub == nil && subs == nil {
			return nil, &auth.Denied{Msg: "settings command doesn't have publishing or subscription."}
		}
		for _, t := range pub.GetTopics() {
			if err = add("topic", t, auth.ActPub); err != nil {
				return nil, err
			}
		}
		if subs != nil {
			if err = add("group", subs.GetGroup(), auth.ActSub); err != nil {
				return nil, err
			}
			for _, e := range subs.GetSubscriptions() {
				if err = add("topic", e.GetTopic(), auth.ActSub); err != nil {
					return nil, err
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// need is PlainAccessResource.parse of a gRPC request: what each RPC needs
// of which topic and group. RPCs it does not name need only a known,
// signed account.
func need(req proto.Message) (*acl.Need, error) {
	n := &acl.Need{}
	switch r := req.(type) {
	case *v2.HeartbeatRequest:
		if ct := r.GetClientType(); ct == v2.ClientType_PUSH_CONSUMER || ct == v2.ClientType_SIMPLE_CONSUMER {
			if r.Group == nil {
				return nil, n.Refuse("Consumer heartbeat doesn't have group")
			}
			n.Group(r.GetGroup().GetName(), acl.PermSub)
		}
	case *v2.SendMessageRequest:
		msgs := r.GetMessages()
		if len(msgs) == 0 {
			return nil, n.Refuse("SendMessageRequest, messageCount is zero")
		}
		topic := msgs[0].GetTopic()
		for _, m := range msgs[1:] {
			if !proto.Equal(m.GetTopic(), topic) {
				return nil, n.Refuse("SendMessageRequest, messages' topic is not consistent")
			}
		}
		n.Topic(topic.GetName(), acl.PermPub)
	case *v2.RecallMessageRequest:
		n.Topic(r.GetTopic().GetName(), acl.PermPub)
	case *v2.ReceiveMessageRequest:
		n.Group(r.GetGroup().GetName(), acl.PermSub)
		n.Topic(r.GetMessageQueue().GetTopic().GetName(), acl.PermSub)
	case *v2.AckMessageRequest:
		n.Group(r.GetGroup().GetName(), acl.PermSub)
		n.Topic(r.GetTopic().GetName(), acl.PermSub)
	case *v2.ForwardMessageToDeadLetterQueueRequest:
		n.Group(r.GetGroup().GetName(), acl.PermSub)
		n.Topic(r.GetTopic().GetName(), acl.PermSub)
	case *v2.EndTransactionRequest:
		n.Topic(r.GetTopic().GetName(), acl.PermPub)
	case *v2.TelemetryCommand:
		st, ok := r.GetCommand().(*v2.TelemetryCommand_Settings)
		if !ok {
			break
		}
		pub, sub := st.Settings.GetPublishing(), st.Settings.GetSubscription()
		for _, t := range pub.GetTopics() {
			n.Topic(t.GetName(), acl.PermPub)
		}
		if sub != nil {
			n.Group(sub.GetGroup().GetName(), acl.PermSub)
			for _, e := range sub.GetSubscriptions() {
				n.Topic(e.GetTopic().GetName(), acl.PermSub)
			}
		}
		if pub == nil && sub == nil {
			return nil, n.Refuse("settings command doesn't have publishing or subscription")
		}
	case *v2.NotifyClientTerminationRequest:
		if strings.TrimSpace(r.GetGroup().GetName()) != "" {
			n.Group(r.GetGroup().GetName(), acl.PermSub)
		}
	case *v2.QueryRouteRequest:
		n.Topic(r.GetTopic().GetName(), acl.PermAny)
	case *v2.QueryAssignmentRequest:
		n.Group(r.GetGroup().GetName(), acl.PermSub)
		n.Topic(r.GetTopic().GetName(), acl.PermSub)
	case *v2.ChangeInvisibleDurationRequest:
		n.Group(r.GetGroup().GetName(), acl.PermSub)
		n.Topic(r.GetTopic().GetName(), acl.PermSub)
	}
	return n, nil
}

// refusal is the status of a refused request.
func refusal(err error) *v2.Status {
	msg := err.Error()
	var d *acl.Denied
	if errors.As(err, &d) {
		msg = d.Msg
	}
	return &v2.Status{Code: v2.Code_UNAUTHORIZED, Message: msg}
}

// responseTypes are the response messages of the service's methods by
// full method name, to answer any of them with a status.
var responseTypes = func() map[string]protoreflect.MessageType {
	out := make(map[string]protoreflect.MessageType)
	sd := v2.File_rmqio_apiv2_service_proto.Services().ByName("MessagingService")
	methods := sd.Methods()
	for i := range methods.Len() {
		md := methods.Get(i)
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
		if err != nil {
			panic("grpcapi: " + err.Error())
		}
		// The wire name of the service, not its proto full name (apiv2's
		// doc.go says why they differ).
		out["/"+v2.MessagingService_ServiceDesc.ServiceName+"/"+string(md.Name())] = mt
	}
	return out
}()

// statusResponse is method's response carrying only st (nil for a method
// the service does not have).
func statusResponse(method string, st *v2.Status) proto.Message {
	mt := responseTypes[method]
	if mt == nil {
		return nil
	}
	m := mt.New()
	m.Set(mt.Descriptor().Fields().ByName("status"), protoreflect.ValueOfMessage(st.ProtoReflect()))
	return m.Interface()
}

// unaryACL checks every unary request once it is decoded (and marks it
// arrived, limits.go).
func (s *Server) unaryACL(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	arrived(ctx)
	if m, ok := req.(proto.Message); ok {
		if err := s.authorize(ctx, m); err != nil {
			if resp := statusResponse(info.FullMethod, refusal(err)); resp != nil {
				return resp, nil
			}
		}
	}
	return handler(ctx, req)
}

// errRefused ends a stream whose request was refused; the refusal was
// written to it.
var errRefused = errors.New("grpcapi: request refused")

// streamACL checks every message a stream receives (the one request of
// ReceiveMessage, each command of Telemetry); the first marks the call
// arrived (limits.go).
func (s *Server) streamACL(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	w := &aclStream{ServerStream: ss, s: s, method: info.FullMethod}
	err := handler(srv, w)
	if errors.Is(err, errRefused) {
		return nil
	}
	return err
}

// aclStream checks what it receives; its sends are serialised so that a
// refusal does not race the handler's own writes.
type aclStream struct {
	grpc.ServerStream
	s      *Server
	method string
	mu     sync.Mutex
}

func (w *aclStream) SendMsg(m any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ServerStream.SendMsg(m)
}

func (w *aclStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	arrived(w.Context())
	pm, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	err := w.s.authorize(w.Context(), pm)
	if err == nil {
		return nil
	}
	if resp := statusResponse(w.method, refusal(err)); resp != nil {
		if serr := w.SendMsg(resp); serr != nil {
			return serr
		}
	}
	return errRefused
}
