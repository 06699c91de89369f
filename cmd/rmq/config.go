package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/grpcapi"
	"github.com/rmqio/rmq/namesrv"
)

// importantBrokerKeys are the keys -m prints: the stock @ImportantField keys
// of BrokerConfig and MessageStoreConfig that rmq knows, plus listenPort.
var importantBrokerKeys = []string{
	"namesrvAddr", "brokerIP1", "brokerIP2", "brokerName", "brokerClusterName", "brokerId",
	"brokerPermission", "defaultTopicQueueNums", "autoCreateTopicEnable", "clusterTopicEnable",
	"autoCreateSubscriptionGroup", "traceTopicEnable", "listenPort",
	"storePathRootDir", "flushIntervalCommitLog", "deleteWhen", "fileReservedTime",
	"maxTransferBytesOnMessageInMemory", "maxTransferCountOnMessageInMemory",
	"brokerRole", "flushDiskType", "syncFlushTimeout",
}

// importantNamesrvKeys: the stock name server marks none important; these
// are the ones an operator looks for.
var importantNamesrvKeys = []string{"listenPort", "bindAddress", "kvConfigPath", "orderMessageEnable"}

// brokerSettings is everything the broker and standalone commands configure.
type brokerSettings struct {
	opts broker.Options  // every stock key, acted on or kept (broker.StockKeys)
	grpc grpcapi.Options // the 5.x gRPC endpoint in the broker process
	logs logSettings     // read by action.logger; loaded here so the keys are known
	rt   runtimeSettings // the process's own keys (memoryLimitBytes)
}

// defaultBrokerSettings are the settings before the environment, the
// config file and the flags apply.
func defaultBrokerSettings() *brokerSettings {
	return &brokerSettings{opts: broker.DefaultOptions(), grpc: grpcapi.DefaultOptions(), logs: defaultLogSettings()}
}

// confSources are the structs the broker's config keys bind to, in the
// order -p prints them.
func (s *brokerSettings) confSources() []any {
	return []any{&s.opts, &s.grpc, &s.logs, &s.rt}
}

// brokerFlags are the command-line values that override the config file; a
// nil pointer means the flag was not given.
type brokerFlags struct {
	configFile  string
	namesrvAddr *string
	storeDir    *string
	smallStore  *bool
	listenPort  *int
	bindAddress *string
}

// loadBrokerSettings applies, in order: stock defaults, the NAMESRV_ADDR
// environment variable (the Java default for namesrvAddr), the config file,
// then flags. Config file warnings are logged.
func loadBrokerSettings(f brokerFlags, log zerolog.Logger) (*brokerSettings, error) {
	s := defaultBrokerSettings()
	if env := os.Getenv("NAMESRV_ADDR"); env != "" {
		s.opts.NamesrvAddr = env
	}
	if f.configFile != "" {
		warnings, err := conf.LoadFile(f.configFile, s.confSources()...)
		for _, w := range warnings {
			log.Warn().Msg(w)
		}
		if err != nil {
			return nil, err
		}
		for _, w := range s.opts.Warnings() {
			log.Warn().Str("file", f.configFile).Msg(w)
		}
		log.Info().Str("file", f.configFile).Msg("loaded broker config")
		s.opts.ConfigFile = f.configFile // UPDATE_BROKER_CONFIG writes changes back
	}
	// The keys of the process's other parts, for updateBrokerConfig's remark.
	for _, k := range conf.Keys(&s.grpc, &s.logs, &s.rt) {
		if !slices.Contains(conf.Keys(&s.opts), k) {
			s.opts.StartOnlyKeys = append(s.opts.StartOnlyKeys, k)
		}
	}
	if f.namesrvAddr != nil {
		s.opts.NamesrvAddr = *f.namesrvAddr
	}
	if f.storeDir != nil {
		s.opts.StorePathRootDir = *f.storeDir
	}
	if f.smallStore != nil {
		s.opts.SmallStore = *f.smallStore
	}
	if f.listenPort != nil {
		s.opts.ListenPort = *f.listenPort
	}
	if f.bindAddress != nil {
		s.opts.ListenHost = *f.bindAddress
	}
	return s, nil
}

// check applies the stock start-up rules that live outside broker.Options
// (4.9.8 BrokerStartup.createBrokerController): masters always have
// brokerId 0 whatever the file says; a SLAVE keeps its id, which
// Options.Validate refuses unless it is > 0 (stock exits with -3); and
// every name server address must be host:port.
func (s *brokerSettings) check() error {
	var errs []error
	if s.opts.BrokerRole != broker.RoleSlave {
		s.opts.BrokerID = 0
	}
	if err := s.opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkNamesrvAddr(s.opts.NamesrvAddr); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkNamesrvAddr validates a "host:port;host:port" list, as BrokerStartup
// does before it starts.
func checkNamesrvAddr(list string) error {
	for _, a := range strings.Split(list, ";") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("the name server address [%s] is illegal, please set it as \"127.0.0.1:9876;192.168.0.1:9876\"", a)
		}
	}
	return nil
}

// namesrvFlags are the name server command-line overrides.
type namesrvFlags struct {
	configFile  string
	listenPort  *int
	bindAddress *string
}

// namesrvConfSources are the structs the name server's config keys bind to.
// The controller keys of enableControllerInNamesrv are known here (so a
// stock namesrv.conf loads without warnings); namesrvController reads them.
func namesrvConfSources(opts *namesrv.Options, logs *logSettings) []any {
	ctl := controller.DefaultConfig()
	return []any{opts, logs, &ctl}
}

// loadNamesrvSettings applies stock defaults, the config file, then flags.
func loadNamesrvSettings(f namesrvFlags, log zerolog.Logger) (*namesrv.Options, error) {
	opts := namesrv.DefaultOptions()
	if f.configFile != "" {
		logs := defaultLogSettings() // read by action.logger; loaded so the keys are known
		warnings, err := conf.LoadFile(f.configFile, namesrvConfSources(&opts, &logs)...)
		for _, w := range warnings {
			log.Warn().Msg(w)
		}
		if err != nil {
			return nil, err
		}
		log.Info().Str("file", f.configFile).Msg("loaded name server config")
		opts.ConfigStorePath = f.configFile // as NamesrvStartup: UPDATE_NAMESRV_CONFIG writes here
	}
	if f.listenPort != nil {
		opts.ListenPort = *f.listenPort
	}
	if f.bindAddress != nil {
		opts.ListenHost = *f.bindAddress
	}
	return &opts, nil
}
