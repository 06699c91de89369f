package rmqtest

// WithGRPC also serves the gRPC endpoint of the 5.x SDKs (package grpcapi,
// as `rmq broker` with enableGrpc=true) on a free 127.0.0.1 port, TLS and
// plaintext on the same port; GRPCAddr reports it. It is the same as
// WithBrokerConfig(map[string]string{"enableGrpc": "true"}); the endpoint's
// other keys (an explicit enableGrpc wins, grpcServerPort, the long-polling and invisible-time bounds,
// grpcTlsCertPath, ...) go through WithBrokerConfig too. A restart keeps
// its port.
func WithGRPC() Option {
	return func(c *config) { c.grpc = true }
}

// GRPCAddr is the gRPC endpoint's "127.0.0.1:port", the endpoints a 5.x
// SDK is given, or "" without WithGRPC (or enableGrpc).
func (s *Server) GRPCAddr() string {
	if s.gs == nil {
		return ""
	}
	return s.gs.Addr().String()
}
