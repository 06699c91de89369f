package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// runtimeConfig holds the options UPDATE_BROKER_CONFIG may change while the
// broker runs. A snapshot is never modified: an update stores a new one, so
// request handlers read b.runtime() without locks and see either the old or
// the new values, never a mix. Every other option is fixed at New (Options).
//
// brokerIP1, brokerIP2 and listenPort change only what the broker advertises
// (as in Java, where listenPort is read when registering): the sockets stay
// where they are. That is what a container needs, whose broker listens on
// 10911 inside while clients reach it at a mapped address outside.
type runtimeConfig struct {
	BrokerIP1                         string `conf:"brokerIP1"`
	BrokerIP2                         string `conf:"brokerIP2"`
	ListenPort                        int    `conf:"listenPort"`
	BrokerPermission                  int32  `conf:"brokerPermission"`
	MaxTransferCountOnMessageInMemory int    `conf:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInMemory int    `conf:"maxTransferBytesOnMessageInMemory"`
	ShortPollingTimeMills             int    `conf:"shortPollingTimeMills"`
	LongPollingEnable                 bool   `conf:"longPollingEnable"`
	TraceOn                           bool   `conf:"traceOn"`
	RegionID                          string `conf:"regionId"`
	EnablePropertyFilter              bool   `conf:"enablePropertyFilter"`
	FilterSupportRetry                bool   `conf:"filterSupportRetry"`
	RejectTransactionMessage          bool   `conf:"rejectTransactionMessage"`
	DefaultQueryMaxNum                int    `conf:"defaultQueryMaxNum"`
	NotifyConsumerIdsChangedEnable    bool   `conf:"notifyConsumerIdsChangedEnable"`
	MaxTransferCountOnMessageInDisk   int    `conf:"maxTransferCountOnMessageInDisk"`
	MaxTransferBytesOnMessageInDisk   int    `conf:"maxTransferBytesOnMessageInDisk"`
	SlaveReadEnable                   bool   `conf:"slaveReadEnable"`
	OffsetCheckInSlave                bool   `conf:"offsetCheckInSlave"`
	// RetentionConfig: the retention keys, handed to the store
	// (store.SetRetention) by the update that changes them.
	RetentionConfig
	// FastFailConfig: read by each sweep (fastfail.go); the page-cache-busy
	// timeout is handed to the store by the update that changes it.
	FastFailConfig

	// all is every option as configured: the start's, with the updates
	// since (GET_BROKER_CONFIG reports it; the keys outside runtimeConfig
	// act from the next start).
	all Options

	// version is the configuration's DataVersion: bumped by every update.
	version dataVersion
	// host is brokerIP1 (resolved to IPv4) and listenPort: the STOREHOST of
	// the records stored while this configuration is in force.
	host netip.AddrPort
}

// addr is the address registered with the name servers: brokerIP1:listenPort.
func (rc *runtimeConfig) addr() string { return joinHostPort(rc.BrokerIP1, rc.ListenPort) }

// advertisesChange reports whether next registers differently from rc.
func (rc *runtimeConfig) advertisesChange(next *runtimeConfig) bool {
	return rc.BrokerIP1 != next.BrokerIP1 || rc.BrokerIP2 != next.BrokerIP2 ||
		rc.ListenPort != next.ListenPort || rc.BrokerPermission != next.BrokerPermission
}

// dataVersion is Java's DataVersion as GET_BROKER_CONFIG reports it.
type dataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
}

func runtimeConfigFrom(o *Options, host netip.AddrPort, bootMs int64) *runtimeConfig {
	return &runtimeConfig{
		BrokerIP1:                         o.BrokerIP1,
		BrokerIP2:                         o.BrokerIP2,
		ListenPort:                        o.ListenPort,
		BrokerPermission:                  o.BrokerPermission,
		MaxTransferCountOnMessageInMemory: o.MaxTransferCountOnMessageInMemory,
		MaxTransferBytesOnMessageInMemory: o.MaxTransferBytesOnMessageInMemory,
		ShortPollingTimeMills:             o.ShortPollingTimeMills,
		LongPollingEnable:                 o.LongPollingEnable,
		TraceOn:                           o.TraceOn,
		RegionID:                          o.RegionID,
		EnablePropertyFilter:              o.EnablePropertyFilter,
		FilterSupportRetry:                o.FilterSupportRetry,
		RejectTransactionMessage:          o.RejectTransactionMessage,
		DefaultQueryMaxNum:                o.DefaultQueryMaxNum,
		NotifyConsumerIdsChangedEnable:    o.NotifyConsumerIdsChangedEnable,
		MaxTransferCountOnMessageInDisk:   o.MaxTransferCountOnMessageInDisk,
		MaxTransferBytesOnMessageInDisk:   o.MaxTransferBytesOnMessageInDisk,
		SlaveReadEnable:                   o.SlaveReadEnable,
		OffsetCheckInSlave:                o.OffsetCheckInSlave,
		RetentionConfig:                   o.RetentionConfig,
		FastFailConfig:                    o.FastFailConfig,
		all:                               *o,
		version:                           dataVersion{Timestamp: bootMs},
		host:                              host,
	}
}

// validate refuses what Options.Validate lets a start have but a running
// broker cannot advertise: listenPort 0 (free ports from the system) is
// resolved at New, so an update must name a real port.
func (rc *runtimeConfig) validate() error {
	if rc.ListenPort <= 0 || rc.ListenPort > 65535 {
		return fmt.Errorf("listenPort %d is not a TCP port", rc.ListenPort)
	}
	return nil
}

// runtimeKeys lists the keys UPDATE_BROKER_CONFIG accepts, in declaration order.
var runtimeKeys = conf.Keys(&runtimeConfig{})

// LiveKeys lists the keys an UPDATE_BROKER_CONFIG applies at once; every
// other key it accepts is kept, persisted and reported, and acts from the
// next start.
func LiveKeys() []string { return slices.Clone(runtimeKeys) }

// runtime returns the current runtime-changeable options.
func (b *Broker) runtime() *runtimeConfig {
	if rc := b.live.Load(); rc != nil {
		return rc
	}
	b.live.CompareAndSwap(nil, runtimeConfigFrom(&b.opts, b.host, b.clock.Now().UnixMilli()))
	return b.live.Load()
}

// effectiveOptions is Options as configured: the start's values with the
// updates since.
func (b *Broker) effectiveOptions() Options { return b.runtime().all }

// processGetBrokerConfig serves GET_BROKER_CONFIG: every option as Java
// properties lines ("key=value\n", escaped so that Properties.load reads the
// values back), and the configuration's data version in the header.
func (b *Broker) processGetBrokerConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	o := b.effectiveOptions()
	var body bytes.Buffer
	conf.Print(&body, &o)
	v, err := json.Marshal(b.runtime().version)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("version", string(v))
	resp.Body = body.Bytes()
	return resp
}

// processUpdateBrokerConfig serves UPDATE_BROKER_CONFIG as the stock broker
// does (Java 4.9.8 AdminBrokerProcessor.updateBrokerConfig, then
// Configuration.update and persist): any key not in the black list is
// accepted, kept, reported by GET_BROKER_CONFIG and written to the config
// file the broker started with (-c), so that the next start reads it. The
// keys of runtimeConfig (LiveKeys) act at once; every other key acts from
// the next start, as most stock keys do (docs/compatibility.md, stock-keys
// table, column Live). Without a config file nothing is written (Java
// writes ~/store/config/broker.properties, which no start reads).
//
// A key of the black list (brokerConfigPath, rocketmqHome, configBlackList
// and configBlackList's ";" list, read at start as stock) is refused with
// NO_PERMISSION and the stock remark; an empty body is SUCCESS.
//
// The body is checked the way a start checks the config file
// (Options.Validate, after conf.Load), so that a value is refused at run
// time exactly when it would stop a start: the whole update then changes
// nothing and answers SYSTEM_ERROR with the reason. Java drops an
// unparsable value silently and answers SUCCESS, and ignores an unknown key;
// rmq refuses both and names the key a typo most likely meant.
//
// The retention keys (RetentionConfig) reach the store before the reply.
// A change of brokerIP1, brokerIP2, listenPort or brokerPermission is
// registered with every name server before the reply (the stock broker does
// so only for brokerPermission, and picks up the others at the next periodic
// registration, up to a minute later). brokerIP1 may be a host name,
// resolved to an IPv4 address as Java resolves it into storeHost: the
// records stored afterwards carry it as STOREHOST, so their offsetMsgIds
// lead a client (queryMsgById) to the advertised address.
func (b *Broker) processUpdateBrokerConfig(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	keys := conf.PropertyKeys(req.Body)
	if len(keys) == 0 {
		return remoting.NewResponse(req, remoting.Success, "")
	}
	black := ConfigBlackList(b.opts.ConfigBlackList)
	known := conf.Keys(&Options{})
	var unknown, startOnly []string
	for _, k := range keys {
		if slices.Contains(black, k) {
			return remoting.NewResponse(req, remoting.NoPermission, "Can not update config in black list.")
		}
		if slices.Contains(b.opts.StartOnlyKeys, k) {
			startOnly = append(startOnly, k)
			continue
		}
		if !slices.Contains(known, k) {
			u := k
			if near := conf.Closest(k, known); near != "" {
				u += fmt.Sprintf(" (did you mean %s?)", near)
			}
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: unknown key "+strings.Join(unknown, ", "))
	}
	if len(startOnly) > 0 {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+strings.Join(startOnly, ", ")+
			" is read at start only (gRPC endpoint, logging, process): set it in the config file and restart")
	}

	b.configMu.Lock()
	defer b.configMu.Unlock()
	cur := b.runtime()
	all := cur.all
	if _, err := conf.Load(bytes.NewReader(req.Body), "updateBrokerConfig", &all); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	// At start an empty address means the default; a running broker
	// advertising "" would be unreachable, so an update must name one.
	if all.BrokerIP1 == "" || all.BrokerIP2 == "" {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: brokerIP1 and brokerIP2 must not be empty")
	}
	all.RebuildTLS() // check tls.* as a start does
	if err := all.Validate(); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
	}
	next := runtimeConfigFrom(&all, cur.host, 0)
	if err := next.validate(); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
	}
	if next.RetentionConfig != cur.RetentionConfig {
		if err := b.store.SetRetention(next.retentionOptions()); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
		}
	}
	if next.OsPageCacheBusyTimeOutMills != cur.OsPageCacheBusyTimeOutMills {
		b.store.SetOSPageCacheBusyTimeout(pageCacheBusyTimeout(next.OsPageCacheBusyTimeOutMills))
	}
	if next.BrokerIP1 != cur.BrokerIP1 || next.ListenPort != cur.ListenPort {
		ip, err := resolveIPv4(next.BrokerIP1)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
		}
		next.host = netip.AddrPortFrom(ip, uint16(next.ListenPort))
		if err := b.store.SetStoreHost(next.host); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, "updateBrokerConfig: "+err.Error())
		}
	}
	next.version = dataVersion{Counter: cur.version.Counter + 1, Timestamp: b.clock.Now().UnixMilli()}
	b.live.Store(next)
	b.log.Info().Object("client", c).Strs("keys", keys).Str("addr", next.addr()).Msg("broker config updated")
	for _, w := range all.Warnings() {
		b.log.Warn().Object("client", c).Msg("updateBrokerConfig: " + w)
	}
	if err := b.persistConfig(&all, keys); err != nil {
		// As Java's Configuration.persist: logged, the update stands.
		b.log.Error().Err(err).Str("file", b.opts.ConfigFile).Msg("updateBrokerConfig: config file not written")
	}
	if cur.advertisesChange(next) {
		// Before answering, as the stock broker does for brokerPermission:
		// once mqadmin returns, the name servers hand out the new address
		// (a Testcontainers recipe starts its clients right after).
		b.registerAll(false)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// ConfigBlackList is the stock black list (AdminBrokerProcessor
// initConfigBlackList): three fixed keys and the configured ";" list.
func ConfigBlackList(configured string) []string {
	out := []string{"brokerConfigPath", "rocketmqHome", "configBlackList"}
	for _, k := range strings.Split(configured, ";") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// resolveTimeout bounds the look-up of a brokerIP1 that is a host name.
const resolveTimeout = 5 * time.Second

// resolveIPv4 returns host as an IPv4 address: host itself when it is one,
// else the first IPv4 address the system resolver gives for it.
func resolveIPv4(host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip = ip.Unmap(); !ip.Is4() {
			return netip.Addr{}, fmt.Errorf("brokerIP1 %q is not an IPv4 address", host)
		}
		return ip, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("brokerIP1 %q does not resolve to an IPv4 address: %v", host, err)
	}
	return ips[0].Unmap(), nil
}

// persistConfig writes the values of keys in rc to the config file the
// broker started with, so that the next start reads them. Java's
// Configuration.persist rewrites that file with every key of every config
// object; rmq keeps the operator's file as it is (comments, order, keys
// left at their defaults) and only replaces the lines of the changed keys,
// or appends them. The file is replaced atomically.
func (b *Broker) persistConfig(o *Options, keys []string) error {
	path := b.opts.ConfigFile
	if path == "" {
		return nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return store.WriteFileAtomic(b.opts.FS, path, conf.RewriteKeys(old, keys, o))
}
