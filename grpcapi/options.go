package grpcapi

import (
	"github.com/rs/zerolog"
)

// DefaultPort is the stock proxy's grpcServerPort.
const DefaultPort = 8081

// Options configures the gRPC endpoint. `conf` tags are broker.conf keys
// (the stock ProxyConfig names where one exists).
type Options struct {
	// Enable serves the endpoint (rmq's key; the stock broker runs the proxy
	// only with --enable-proxy).
	Enable bool `conf:"enableGrpc"`
	// Port is the listen port on the broker's bind address; 0 picks a free
	// port (Server.Addr reports it).
	Port int `conf:"grpcServerPort"`
	// TLSCertPath and TLSKeyPath name a PEM certificate and key for TLS;
	// without them a self-signed certificate is made at start (the stock
	// proxy's tlsTestModeEnable).
	TLSCertPath string `conf:"grpcTlsCertPath"`
	TLSKeyPath  string `conf:"grpcTlsKeyPath"`
	// MaxDelayTimeMills bounds how far ahead a delivery timestamp may be
	// (ProxyConfig maxDelayTimeMills, one day).
	MaxDelayTimeMills int64 `conf:"maxDelayTimeMills"`

	Logger zerolog.Logger `conf:"-"`
}

// DefaultOptions returns the defaults: enabled on port 8081.
func DefaultOptions() Options {
	return Options{Enable: true, Port: DefaultPort, MaxDelayTimeMills: 24 * 60 * 60 * 1000, Logger: zerolog.Nop()}
}
