package controller

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// Options configures a Controller. `conf` tags are the keys of a stock
// controller.conf (5.3.3 ControllerConfig and JraftConfig in Config, the
// listen address of NettyServerConfig); "-" marks Go-only settings.
type Options struct {
	Config
	// ListenPort and ListenHost are the remoting server's (brokers and
	// mqadmin dial it); the Raft transport listens on the peer address.
	// With the DLedger keys the two must differ. 0 takes a free port.
	ListenPort int    `conf:"listenPort"`
	ListenHost string `conf:"bindAddress"`
	// RaftTimeout is the heartbeat and election timeout of hashicorp/raft
	// (jRaftElectionTimeoutMs with controllerType jRaft; 1 s otherwise).
	// Tests shorten it.
	RaftTimeout time.Duration `conf:"-"`
	// Transport, when set, replaces the TCP transport (tests: raft's
	// in-memory transport); its LocalAddr must be this node's peer address.
	Transport raft.Transport `conf:"-"`
	// NoListener serves no remoting port: the name server hands the
	// controller codes over (enableControllerInNamesrv), and Addr is
	// AdvertiseAddr.
	NoListener    bool   `conf:"-"`
	AdvertiseAddr string `conf:"-"`
	// ServerConfig holds the remoting connection limits.
	remoting.ServerConfig
	Clock  clock.Clock    `conf:"-"`
	Logger zerolog.Logger `conf:"-"`
}

// Config holds the ControllerConfig and JraftConfig keys: those of a
// standalone controller.conf and of a namesrv.conf with
// enableControllerInNamesrv.
type Config struct {
	// ControllerType is DLedger (the peers come from controllerDLeger*)
	// or jRaft (from jRaft*). Either way the log is hashicorp/raft's: the
	// keys only say where the peers are.
	ControllerType string `conf:"controllerType"`
	// Group, Peers and SelfID are the DLedger keys: Peers is
	// "n0-host:port;n1-host:port;…", the Raft transport of node SelfID
	// listens on its own entry.
	Group  string `conf:"controllerDLegerGroup"`
	Peers  string `conf:"controllerDLegerPeers"`
	SelfID string `conf:"controllerDLegerSelfId"`
	// The jRaft keys: InitConf "host:port,host:port,…" are the Raft
	// addresses (also the node ids), ServerID this node's, RPCAddrs the
	// remoting address of each, in InitConf's order.
	JRaftGroupID         string `conf:"jRaftGroupId"`
	JRaftServerID        string `conf:"jRaftServerId"`
	JRaftInitConf        string `conf:"jRaftInitConf"`
	JRaftRPCAddrs        string `conf:"jRaftControllerRPCAddr"`
	JRaftElectionTimeout int    `conf:"jRaftElectionTimeoutMs"`
	// StorePath holds the Raft log (raft.db) and its snapshots; "" keeps
	// them in memory (the node forgets everything when it stops).
	StorePath string `conf:"controllerStorePath"`
	// ScanNotActiveBrokerInterval is how often silent brokers are looked
	// for (their own heartbeatTimeoutMills decides when they are).
	ScanNotActiveBrokerInterval time.Duration `conf:"scanNotActiveBrokerInterval,ms"`
	// ScanInactiveMasterInterval is how often the leader looks for sets
	// whose master is gone while a member is alive.
	ScanInactiveMasterInterval time.Duration `conf:"scanInactiveMasterInterval,ms"`
	EnableElectUncleanMaster   bool          `conf:"enableElectUncleanMaster"`
	NotifyBrokerRoleChanged    bool          `conf:"notifyBrokerRoleChanged"`
	ElectMasterMaxRetryCount   int           `conf:"electMasterMaxRetryCount"`
	// ProcessReadEvent makes the leader confirm its leadership with a
	// quorum before it answers a read (stock appends an empty entry).
	ProcessReadEvent bool `conf:"processReadEvent"`
}

// Stock defaults (ControllerConfig, ControllerStartup).
const (
	DefaultListenPort  = 19876
	DLedgerController  = "DLedger"
	JRaftController    = "jRaft"
	defaultScan        = 5 * time.Second
	defaultElectRetry  = 3
	defaultRaftTimeout = time.Second
)

// DefaultOptions returns the stock defaults.
func DefaultOptions() Options {
	return Options{
		Config:       DefaultConfig(),
		ListenPort:   DefaultListenPort,
		ListenHost:   "0.0.0.0",
		ServerConfig: remoting.DefaultServerConfig(),
		Clock:        clock.Real{},
		Logger:       zerolog.Nop(),
	}
}

// DefaultConfig returns ControllerConfig's defaults.
func DefaultConfig() Config {
	return Config{
		ControllerType:              DLedgerController,
		ScanNotActiveBrokerInterval: defaultScan,
		ScanInactiveMasterInterval:  defaultScan,
		NotifyBrokerRoleChanged:     true,
		ElectMasterMaxRetryCount:    defaultElectRetry,
		JRaftGroupID:                "jRaft-Controller",
		JRaftElectionTimeout:        1000,
	}
}

// peer is one controller node: its id, Raft address and, when the
// configuration says (jRaft), its remoting address.
type peer struct {
	ID, RaftAddr, RPCAddr string
}

// ErrInvalidOptions wraps every validation failure.
var ErrInvalidOptions = errors.New("controller: invalid options")

// peers parses the peer list of the configured type and finds this node.
func (o *Config) peers() (all []peer, self peer, group string, err error) {
	switch o.ControllerType {
	case DLedgerController, "":
		if o.Peers == "" {
			return nil, self, "", fmt.Errorf("%w: controllerDLegerPeers is empty", ErrInvalidOptions)
		}
		if o.SelfID == "" {
			return nil, self, "", fmt.Errorf("%w: controllerDLegerSelfId is empty", ErrInvalidOptions)
		}
		for _, f := range strings.Split(o.Peers, ";") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			id, addr, ok := strings.Cut(f, "-")
			if !ok || id == "" {
				return nil, self, "", fmt.Errorf("%w: controllerDLegerPeers entry %q is not id-host:port", ErrInvalidOptions, f)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, self, "", fmt.Errorf("%w: controllerDLegerPeers entry %q: %v", ErrInvalidOptions, f, err)
			}
			all = append(all, peer{ID: id, RaftAddr: addr})
		}
		group = o.Group
	case JRaftController:
		addrs := splitList(o.JRaftInitConf, ",")
		rpcs := splitList(o.JRaftRPCAddrs, ",")
		if len(addrs) == 0 || len(rpcs) != len(addrs) {
			return nil, self, "", fmt.Errorf("%w: jRaftInitConf (%d addresses) and jRaftControllerRPCAddr (%d) must list the same nodes", ErrInvalidOptions, len(addrs), len(rpcs))
		}
		for i, a := range addrs {
			all = append(all, peer{ID: a, RaftAddr: a, RPCAddr: rpcs[i]})
		}
		o.SelfID = o.JRaftServerID
		group = o.JRaftGroupID
	default:
		return nil, self, "", fmt.Errorf("%w: controllerType %q is neither %s nor %s", ErrInvalidOptions, o.ControllerType, DLedgerController, JRaftController)
	}
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p.ID] {
			return nil, self, "", fmt.Errorf("%w: controller peer id %q is listed twice", ErrInvalidOptions, p.ID)
		}
		seen[p.ID] = true
		if p.ID == o.SelfID {
			self = p
		}
	}
	if self.ID == "" {
		return nil, self, "", fmt.Errorf("%w: this node's id %q is not among the peers", ErrInvalidOptions, o.SelfID)
	}
	return all, self, group, nil
}

func splitList(s, sep string) []string {
	var out []string
	for _, f := range strings.Split(s, sep) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// validate fills defaults and checks ranges.
func (o *Options) validate() error {
	var errs []error
	if o.ListenPort < 0 || o.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("listenPort %d out of range 0..65535", o.ListenPort))
	}
	if o.ListenHost == "" {
		o.ListenHost = "0.0.0.0"
	}
	if o.ScanNotActiveBrokerInterval <= 0 {
		o.ScanNotActiveBrokerInterval = defaultScan
	}
	if o.ScanInactiveMasterInterval <= 0 {
		o.ScanInactiveMasterInterval = defaultScan
	}
	if o.ElectMasterMaxRetryCount <= 0 {
		o.ElectMasterMaxRetryCount = 1
	}
	if o.RaftTimeout <= 0 {
		o.RaftTimeout = defaultRaftTimeout
		if o.ControllerType == JRaftController && o.JRaftElectionTimeout > 0 {
			o.RaftTimeout = time.Duration(o.JRaftElectionTimeout) * time.Millisecond
		}
	}
	if err := o.ServerConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}
