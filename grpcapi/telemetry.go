package grpcapi

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// Settings the endpoint answers with (ProxyConfig defaults).
const (
	producerMaxAttempts   = 3
	producerBackoffFirst  = 10 * time.Millisecond
	producerBackoffMax    = time.Second
	producerBackoffFactor = 2
	receiveBatchSize      = 32
)

// session is a client that sent its Settings, with the Telemetry stream
// the server writes commands to.
type session struct {
	id       string
	settings atomic.Pointer[v2.Settings] // as answered

	mu     sync.Mutex // serialises writes to stream
	stream v2.MessagingService_TelemetryServer
}

func (s *session) send(cmd *v2.TelemetryCommand) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Send(cmd)
}

// clientTable holds the sessions by client id.
type clientTable struct {
	mu   sync.Mutex
	byID map[string]*session
}

func newClientTable() *clientTable { return &clientTable{byID: make(map[string]*session)} }

func (t *clientTable) get(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

func (t *clientTable) put(sess *session) {
	t.mu.Lock()
	t.byID[sess.id] = sess
	t.mu.Unlock()
}

// drop forgets the client id if its session is still on stream (nil: any).
func (t *clientTable) drop(id string, stream v2.MessagingService_TelemetryServer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sess := t.byID[id]; sess != nil && (stream == nil || sess.stream == stream) {
		delete(t.byID, id)
	}
}

// producerOf returns a producer session publishing topic.
func (t *clientTable) producerOf(topic string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sess := range t.byID {
		if sess.settings.Load().GetClientType() != v2.ClientType_PRODUCER {
			continue
		}
		for _, r := range sess.settings.Load().GetPublishing().GetTopics() {
			if r.GetName() == topic {
				return sess
			}
		}
	}
	return nil
}

// Telemetry is the client's command stream. The client writes its Settings
// first and waits for the server's; the server later writes transaction
// check-backs (RecoverOrphanedTransactionCommand) to it.
func (s *Server) Telemetry(stream v2.MessagingService_TelemetryServer) error {
	id := clientID(stream.Context())
	defer func() {
		if id != "" {
			s.clients.drop(id, stream)
		}
	}()
	for {
		cmd, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch c := cmd.GetCommand().(type) {
		case *v2.TelemetryCommand_Settings:
			if id == "" {
				return status.Error(codes.InvalidArgument, "x-mq-client-id is required")
			}
			answer, err := s.mergeSettings(c.Settings)
			if err != nil {
				return err
			}
			sess := s.clients.get(id)
			if sess == nil || sess.stream != stream {
				sess = &session{id: id, stream: stream}
			}
			sess.settings.Store(answer)
			s.clients.put(sess)
			if err := sess.send(&v2.TelemetryCommand{Status: okStatus(), Command: &v2.TelemetryCommand_Settings{Settings: answer}}); err != nil {
				return err
			}
		case *v2.TelemetryCommand_ThreadStackTrace:
			s.log.Info().Str("client", id).Str("nonce", c.ThreadStackTrace.GetNonce()).Str("stack", c.ThreadStackTrace.GetThreadStackTrace()).Msg("grpc: client thread stack trace")
		case *v2.TelemetryCommand_VerifyMessageResult:
			s.log.Info().Str("client", id).Str("nonce", c.VerifyMessageResult.GetNonce()).Msg("grpc: client verify message result")
		default:
			s.log.Debug().Str("client", id).Msg("grpc: telemetry command ignored")
		}
	}
}

// mergeSettings is the client's Settings with the server's part filled in
// (GrpcClientSettingsManager): retry policy, body size limit, message type
// validation for producers; batch size, long polling for consumers. A
// Settings without publishing or subscription is refused.
func (s *Server) mergeSettings(in *v2.Settings) (*v2.Settings, error) {
	out := &v2.Settings{
		ClientType: in.ClientType, AccessPoint: in.GetAccessPoint(), RequestTimeout: in.GetRequestTimeout(),
		UserAgent: in.GetUserAgent(), Metric: &v2.Metric{On: false},
	}
	switch ps := in.GetPubSub().(type) {
	case *v2.Settings_Publishing:
		out.BackoffPolicy = &v2.RetryPolicy{MaxAttempts: producerMaxAttempts, Strategy: &v2.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &v2.ExponentialBackoff{Initial: durationpb.New(producerBackoffFirst), Max: durationpb.New(producerBackoffMax), Multiplier: producerBackoffFactor},
		}}
		out.PubSub = &v2.Settings_Publishing{Publishing: &v2.Publishing{
			Topics: ps.Publishing.GetTopics(), MaxBodySize: int32(s.b.Options().MaxMessageSize),
			ValidateMessageType: s.opts.EnableTopicMessageTypeCheck || s.b.Options().EnableTopicMessageTypeCheck,
		}}
	case *v2.Settings_Subscription:
		group := ps.Subscription.GetGroup()
		if err := checkGroup(group); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		// GrpcClientSettingsManager.mergeSubscriptionData: retryMaxTimes
		// plus the first delivery, the group's retry policy, FIFO from
		// consumeMessageOrderly.
		maxAttempts, fifo := int32(defaultRetryMaxTimes+1), false
		cfg := s.b.Clients().SubGroups.Find(group.GetName())
		if cfg != nil {
			maxAttempts, fifo = cfg.RetryMaxTimes+1, cfg.ConsumeMessageOrderly
		}
		out.BackoffPolicy = groupRetryPolicy(cfg).backoff(maxAttempts)
		batch := int32(receiveBatchSize)
		out.PubSub = &v2.Settings_Subscription{Subscription: &v2.Subscription{
			Group: group, Subscriptions: ps.Subscription.GetSubscriptions(), Fifo: &fifo,
			ReceiveBatchSize: &batch, LongPollingTimeout: durationpb.New(time.Duration(s.opts.MaxLongPollingMillis) * time.Millisecond),
		}}
	default:
		return nil, status.Error(codes.InvalidArgument, "settings carry neither publishing nor subscription")
	}
	return out, nil
}

// Heartbeat keeps a client that sent its Settings; one that did not gets
// UNRECOGNIZED_CLIENT_TYPE, upon which the SDKs send their Settings again.
func (s *Server) Heartbeat(ctx context.Context, req *v2.HeartbeatRequest) (*v2.HeartbeatResponse, error) {
	id := clientID(ctx)
	if id == "" {
		return &v2.HeartbeatResponse{Status: toStatus(fail(v2.Code_CLIENT_ID_REQUIRED, "client id cannot be empty"))}, nil
	}
	sess := s.clients.get(id)
	if sess == nil {
		return &v2.HeartbeatResponse{Status: toStatus(fail(v2.Code_UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client"))}, nil
	}
	if sess.settings.Load().GetClientType() != v2.ClientType_PRODUCER {
		if err := checkGroup(req.GetGroup()); err != nil {
			return &v2.HeartbeatResponse{Status: toStatus(err)}, nil
		}
	}
	return &v2.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination forgets the client.
func (s *Server) NotifyClientTermination(ctx context.Context, _ *v2.NotifyClientTerminationRequest) (*v2.NotifyClientTerminationResponse, error) {
	id := clientID(ctx)
	if id == "" {
		return &v2.NotifyClientTerminationResponse{Status: toStatus(fail(v2.Code_CLIENT_ID_REQUIRED, "client id cannot be empty"))}, nil
	}
	s.clients.drop(id, nil)
	return &v2.NotifyClientTerminationResponse{Status: okStatus()}, nil
}
