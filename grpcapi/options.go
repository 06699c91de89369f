package grpcapi

import (
	"time"

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
	// EnableTopicMessageTypeCheck is the stock proxy's check (ProxyConfig
	// enableTopicMessageTypeCheck, true): a gRPC send whose kind (normal,
	// FIFO, delay, transactional) its topic's message.type does not take is
	// refused. The key also binds broker.Options' field of that name, which
	// is off by default because the stock broker's remoting port never
	// checks; set in the config file it rules both front ends.
	EnableTopicMessageTypeCheck bool `conf:"enableTopicMessageTypeCheck"`

	// Consumption (ProxyConfig, same names and defaults). A ReceiveMessage
	// long-polls for at least MinLongPollingMillis and at most
	// MaxLongPollingMillis, within the client's deadline.
	MinLongPollingMillis int64 `conf:"grpcClientConsumerMinLongPollingTimeoutMillis"`
	MaxLongPollingMillis int64 `conf:"grpcClientConsumerMaxLongPollingTimeoutMillis"`
	// An explicit invisible duration of a ReceiveMessage must lie in
	// [MinInvisibleMillisForRecv, MaxInvisibleMillis]; a change of invisible
	// duration in [0, MaxInvisibleMillis].
	MinInvisibleMillisForRecv int64 `conf:"minInvisibleTimeMillsForRecv"`
	MaxInvisibleMillis        int64 `conf:"maxInvisibleTimeMills"`
	// AutoRenew honours a ReceiveMessage's auto_renew (push consumers): the
	// message is popped for DefaultInvisibleMillis and its invisible time is
	// renewed RenewAheadMillis before it ends, checked every
	// RenewPeriodMillis, for up to RenewMaxMillis; the client's unacked
	// messages come back InvisibleMillisWhenClear after it leaves.
	AutoRenew                bool  `conf:"enableProxyAutoRenew"`
	DefaultInvisibleMillis   int64 `conf:"defaultInvisibleTimeMills"`
	RenewAheadMillis         int64 `conf:"renewAheadTimeMillis"`
	RenewPeriodMillis        int64 `conf:"renewSchedulePeriodMillis"`
	RenewMaxMillis           int64 `conf:"renewMaxTimeMillis"`
	InvisibleMillisWhenClear int64 `conf:"invisibleTimeMillisWhenClear"`

	Logger zerolog.Logger `conf:"-"`
}

// DefaultOptions returns the defaults: enabled on port 8081.
func DefaultOptions() Options {
	return withDefaults(Options{Enable: true, Port: DefaultPort, AutoRenew: true, EnableTopicMessageTypeCheck: true, Logger: zerolog.Nop()})
}

// withDefaults fills every unset (zero) duration with its ProxyConfig
// default.
func withDefaults(o Options) Options {
	set := func(v *int64, d time.Duration) {
		if *v <= 0 {
			*v = d.Milliseconds()
		}
	}
	set(&o.MaxDelayTimeMills, 24*time.Hour)
	set(&o.MinLongPollingMillis, 5*time.Second)
	set(&o.MaxLongPollingMillis, 20*time.Second)
	set(&o.MinInvisibleMillisForRecv, 10*time.Second)
	set(&o.MaxInvisibleMillis, 12*time.Hour)
	set(&o.DefaultInvisibleMillis, 60*time.Second)
	set(&o.RenewAheadMillis, 10*time.Second)
	set(&o.RenewPeriodMillis, 5*time.Second)
	set(&o.RenewMaxMillis, 3*time.Hour)
	set(&o.InvisibleMillisWhenClear, time.Second)
	return o
}
