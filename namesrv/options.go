package namesrv

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

// Options configures a Server. `conf` tags are the Java namesrv.conf keys
// (NamesrvConfig, NettyServerConfig); "-" marks Go-only settings.
type Options struct {
	// ListenPort 0 takes a port the system chooses; Server.Addr reports it.
	ListenPort int `conf:"listenPort"`
	// ListenHost is the address the listener binds (5.x NettyServerConfig
	// bindAddress; default 0.0.0.0, every interface).
	ListenHost         string `conf:"bindAddress"`
	OrderMessageEnable bool   `conf:"orderMessageEnable"`
	// ScanNotActiveBrokerInterval is how often expired brokers are looked for.
	ScanNotActiveBrokerInterval time.Duration `conf:"-"`
	// BrokerChannelExpiredTime is how long a broker stays routed after its last
	// registration (or unchanged QUERY_DATA_VERSION).
	BrokerChannelExpiredTime time.Duration `conf:"-"`
	// KVConfigPath is the JSON file holding the KV config; "" keeps it in memory only.
	KVConfigPath string `conf:"kvConfigPath"`
	// ConfigStorePath is where UPDATE_NAMESRV_CONFIG writes the keys it
	// changes (NamesrvConfig configStorePath): `rmq namesrv -c FILE` sets
	// it to FILE, as NamesrvStartup does, so the next start reads them.
	// "" (no -c): changes last until the name server stops (stock writes
	// ~/namesrv/namesrv.properties then, which no start reads).
	ConfigStorePath string `conf:"configStorePath"`
	// EnableControllerInNamesrv runs a controller in the name server's
	// process (5.3.3 NamesrvConfig): `rmq namesrv` builds it from the
	// controller keys of the same file and passes it as Controller.
	EnableControllerInNamesrv bool `conf:"enableControllerInNamesrv"`
	// SupportActingMaster lists, in routes, the slave of least id of a
	// slave-acting-master group without a master as its read-only master
	// (5.3.3 NamesrvConfig supportActingMaster; acting_master.go).
	SupportActingMaster bool `conf:"supportActingMaster"`
	// NotifyMinBrokerIDChanged sends NOTIFY_MIN_BROKER_ID_CHANGE to the
	// brokers of a group whose least broker id changed (5.3.3
	// notifyMinBrokerIdChanged).
	NotifyMinBrokerIDChanged bool `conf:"notifyMinBrokerIdChanged"`
	// Controller, when set, serves the request codes it claims on the name
	// server's port (brokers in controller mode then name that address in
	// controllerAddr) and hears of closed connections.
	Controller Extension `conf:"-"`
	// ServerConfig holds the connection limits: idle timeout, connection
	// cap, in-flight budget.
	remoting.ServerConfig

	Now    func() time.Time `conf:"-"`
	Logger zerolog.Logger   `conf:"-"`
}

// Extension is a server that shares the name server's port: the
// controller of enableControllerInNamesrv.
type Extension interface {
	remoting.Handler
	remoting.ConnObserver
	// Serves reports whether the extension answers code.
	Serves(code int32) bool
}

// Stock defaults (NamesrvStartup, NamesrvController, RouteInfoManager).
const (
	DefaultListenPort                  = 9876
	DefaultScanNotActiveBrokerInterval = 10 * time.Second
	DefaultBrokerChannelExpiredTime    = 120 * time.Second
)

// DefaultOptions returns the stock defaults with an in-memory KV config.
func DefaultOptions() Options {
	return Options{
		ListenPort:                  DefaultListenPort,
		ListenHost:                  "0.0.0.0",
		ScanNotActiveBrokerInterval: DefaultScanNotActiveBrokerInterval,
		BrokerChannelExpiredTime:    DefaultBrokerChannelExpiredTime,
		ServerConfig:                remoting.DefaultServerConfig(),
		Now:                         time.Now,
		Logger:                      zerolog.Nop(),
	}
}

// ErrInvalidOptions wraps every validation failure.
var ErrInvalidOptions = errors.New("namesrv: invalid options")

// Validate checks the options and fills unset (zero) values with the defaults.
func (o *Options) Validate() error {
	var errs []error
	if o.ListenPort < 0 || o.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("listenPort %d out of range 0..65535 (0: any free port)", o.ListenPort))
	}
	if o.ListenHost == "" {
		o.ListenHost = "0.0.0.0"
	}
	switch {
	case o.ScanNotActiveBrokerInterval < 0:
		errs = append(errs, fmt.Errorf("scanNotActiveBrokerInterval %v is negative", o.ScanNotActiveBrokerInterval))
	case o.ScanNotActiveBrokerInterval == 0:
		o.ScanNotActiveBrokerInterval = DefaultScanNotActiveBrokerInterval
	}
	switch {
	case o.BrokerChannelExpiredTime < 0:
		errs = append(errs, fmt.Errorf("brokerChannelExpiredTime %v is negative", o.BrokerChannelExpiredTime))
	case o.BrokerChannelExpiredTime == 0:
		o.BrokerChannelExpiredTime = DefaultBrokerChannelExpiredTime
	}
	if err := o.ServerConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}
