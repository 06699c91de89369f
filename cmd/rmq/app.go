package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/remoting"
)

// Flag names. The one-letter aliases and camelCase names are the stock
// mqbroker/mqnamesrv options; the kebab-case ones are rmq's own.
const (
	flagConfigFile  = "configFile"
	flagPrintAll    = "printConfigItem"
	flagPrintImp    = "printImportantConfig"
	flagNamesrvAddr = "namesrvAddr"
	flagStoreDir    = "store-dir"
	flagListenPort  = "listen-port"
	flagNamesrvPort = "namesrv-port"
	flagBindAddress = "bind-address"
	flagSmallStore  = "small-store"
	flagLogLevel    = "log-level"
	flagLogFormat   = "log-format"
	flagLogFile     = "log-file"
)

func commonFlags(configUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagConfigFile, Aliases: []string{"c"}, Usage: configUsage, TakesFile: true},
		&cli.BoolFlag{Name: flagPrintAll, Aliases: []string{"p"}, Usage: "print every config key=value and exit"},
		&cli.BoolFlag{Name: flagPrintImp, Aliases: []string{"m"}, Usage: "print the important config keys and exit"},
		&cli.StringFlag{Name: flagLogLevel, Value: "info", Usage: "trace, debug, info, warn, error or disabled, optionally per component: info,store=debug,broker=warn (key logLevel)"},
		&cli.StringFlag{Name: flagLogFormat, Value: "console", Usage: "console or json, one object per line (key logFormat)"},
		&cli.StringFlag{Name: flagLogFile, Usage: "write logs to this file instead of stderr, rotated by size and age (keys logFile, logFileMaxSize MB, logFileMaxAge days, logFileMaxBackups)"},
	}
}

// extraCommands build the commands defined in other files of this package
// (admin, bench), in registration order.
var extraCommands []func(a *action) *cli.Command

// registerCommand adds a command to the app; call it from an init function.
// build gets the process context: a.ctx ends at SIGINT/SIGTERM, a.stdout and
// a.stderr are the outputs to write to, and a.logger(c) reads --log-level if
// the command defines that flag.
func registerCommand(build func(a *action) *cli.Command) {
	extraCommands = append(extraCommands, build)
}

func newApp(ctx context.Context, stopSignals func(), stdout, stderr io.Writer) *cli.App {
	a := &action{ctx: ctx, stopSignals: stopSignals, stdout: stdout, stderr: stderr}
	app := &cli.App{
		Name:            "rmq",
		Usage:           "a RocketMQ " + protocolVersion + "-compatible name server and broker",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// Errors are printed once, by run.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (as rmq version)"},
		},
		Commands: []*cli.Command{
			{
				Name:  "standalone",
				Usage: "run a name server and one broker in one process",
				Flags: append(commonFlags("broker config file (broker.conf format)"),
					&cli.StringFlag{Name: flagStoreDir, Usage: "store root directory", DefaultText: "storePathRootDir from the config file, else ~/store"},
					&cli.IntFlag{Name: flagNamesrvPort, Value: namesrv.DefaultListenPort, Usage: "name server port (on the broker's bind address; the broker registers there, at 127.0.0.1 for 0.0.0.0)"},
					&cli.IntFlag{Name: flagListenPort, Usage: "broker port; port-2 is served too", DefaultText: "listenPort from the config file, else 10911"},
					&cli.StringFlag{Name: flagBindAddress, Usage: "address the name server and the broker listen on", DefaultText: "bindAddress from the config file, else 0.0.0.0"},
					smallStoreFlag,
				),
				Action: a.standalone,
			},
			{
				Name:  "namesrv",
				Usage: "run a name server",
				Flags: append(commonFlags("name server config file (namesrv.properties format)"),
					&cli.IntFlag{Name: flagListenPort, Usage: "listen port", DefaultText: "listenPort from the config file, else 9876"},
					&cli.StringFlag{Name: flagBindAddress, Usage: "address to listen on", DefaultText: "bindAddress from the config file, else 0.0.0.0"},
				),
				Action: a.namesrv,
			},
			{
				Name:  "broker",
				Usage: "run a broker that registers with the given name servers",
				Flags: append(commonFlags("broker config file (broker.conf format)"),
					&cli.StringFlag{Name: flagNamesrvAddr, Aliases: []string{"n"}, Usage: "name server address list, e.g. 127.0.0.1:9876;192.168.0.1:9876", DefaultText: "namesrvAddr from the config file, else $NAMESRV_ADDR"},
					&cli.StringFlag{Name: flagStoreDir, Usage: "store root directory", DefaultText: "storePathRootDir from the config file, else ~/store"},
					&cli.IntFlag{Name: flagListenPort, Usage: "broker port; port-2 is served too", DefaultText: "listenPort from the config file, else 10911"},
					&cli.StringFlag{Name: flagBindAddress, Usage: "address both broker ports listen on", DefaultText: "bindAddress from the config file, else 0.0.0.0"},
					smallStoreFlag,
				),
				Action: a.broker,
			},
		},
	}
	for _, build := range extraCommands {
		app.Commands = append(app.Commands, build(a))
	}
	dispatch := dispatchAction("rmq")
	app.Action = func(c *cli.Context) error {
		if c.Bool("version") {
			printVersion(stdout)
			return nil
		}
		return dispatch(c)
	}
	app.Commands = append(app.Commands, &cli.Command{
		Name:  "version",
		Usage: "print the version",
		Action: func(*cli.Context) error {
			printVersion(stdout)
			return nil
		},
	})
	return app
}

// action holds what every command needs besides its flags.
type action struct {
	ctx         context.Context
	stopSignals func()
	stdout      io.Writer
	stderr      io.Writer
	logFile     io.Closer // the log file of a.logger, closed by closeLog
}

// logger builds the process logger from the log keys of the -c file, if
// any, overridden by the --log-* flags (logging.go).
func (a *action) logger(c *cli.Context) (zerolog.Logger, error) {
	s := defaultLogSettings()
	if f := c.String(flagConfigFile); f != "" {
		// Only the log keys are read here; the full load reports problems.
		_, _ = conf.LoadFile(f, &s)
	}
	if c.IsSet(flagLogLevel) || s.Level == "" {
		s.Level = c.String(flagLogLevel)
	}
	if c.IsSet(flagLogFormat) {
		s.Format = c.String(flagLogFormat)
	}
	if c.IsSet(flagLogFile) {
		s.File = c.String(flagLogFile)
	}
	log, closer, err := newLogger(a.stderr, s)
	a.logFile = closer
	return log, err
}

// closeLog closes the log file, if any.
func (a *action) closeLog() {
	if a.logFile != nil {
		_ = a.logFile.Close()
	}
}

func (a *action) standalone(c *cli.Context) error {
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	defer a.closeLog()
	bs, err := loadBrokerSettings(brokerFlagsOf(c, false), log)
	if err != nil {
		return err
	}
	nsPort := c.Int(flagNamesrvPort)
	nsOpts, err := loadNamesrvSettings(namesrvFlags{listenPort: &nsPort}, log)
	if err != nil {
		return err
	}
	if nsOpts.KVConfigPath == "" {
		nsOpts.KVConfigPath = filepath.Join(bs.opts.StorePathRootDir, "namesrv", "kvConfig.json")
	}
	// The name server listens where the broker does, with the broker's
	// connection limits: standalone reads one config file.
	nsOpts.ListenHost = bs.opts.ListenHost
	nsOpts.ServerConfig = bs.opts.ServerConfig
	// The broker always registers with the name server of this process.
	own := net.JoinHostPort(dialHost(nsOpts.ListenHost), strconv.Itoa(nsPort))
	if bs.opts.NamesrvAddr != "" && bs.opts.NamesrvAddr != own {
		log.Warn().Str("ignored", bs.opts.NamesrvAddr).Str("namesrvAddr", own).Msg("standalone: the broker registers with its own name server only")
	}
	bs.opts.NamesrvAddr = own
	if m, err := remoting.ParseTLSMode(bs.opts.TLSServerMode); err == nil && m == remoting.TLSEnforcing {
		// Its own name server refuses plaintext.
		bs.opts.TLSEnable = true
	}
	if a.printConfig(c, nsOpts, bs) {
		return nil
	}
	if err := bs.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(nsOpts.KVConfigPath), 0o755); err != nil {
		return fmt.Errorf("kvConfigPath: %w", err)
	}
	nsOpts.Logger = log.With().Str("component", "namesrv").Logger()
	bs.opts.Logger = log // the broker names its own component and its subsystems
	s := &servers{stdout: a.stdout, stderr: a.stderr, log: log, grpc: grpcOptions(bs, log), memoryLimitKey: bs.rt.MemoryLimitBytes}
	return s.run(a.ctx, a.stopSignals, nsOpts, &bs.opts)
}

func (a *action) namesrv(c *cli.Context) error {
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	defer a.closeLog()
	f := namesrvFlags{configFile: c.String(flagConfigFile)}
	if c.IsSet(flagListenPort) {
		p := c.Int(flagListenPort)
		f.listenPort = &p
	}
	if c.IsSet(flagBindAddress) {
		v := c.String(flagBindAddress)
		f.bindAddress = &v
	}
	nsOpts, err := loadNamesrvSettings(f, log)
	if err != nil {
		return err
	}
	if a.printConfig(c, nsOpts, nil) {
		return nil
	}
	nsOpts.Logger = log.With().Str("component", "namesrv").Logger()
	if _, err := namesrvController(nsOpts, f.configFile, log); err != nil {
		return err
	}
	s := &servers{stdout: a.stdout, log: log}
	return s.run(a.ctx, a.stopSignals, nsOpts, nil)
}

func (a *action) broker(c *cli.Context) error {
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	defer a.closeLog()
	bs, err := loadBrokerSettings(brokerFlagsOf(c, true), log)
	if err != nil {
		return err
	}
	if a.printConfig(c, nil, bs) {
		return nil
	}
	if err := bs.check(); err != nil {
		return err
	}
	if len(bs.opts.NamesrvAddrs()) == 0 {
		log.Warn().Msg("no name server address (-n or NAMESRV_ADDR): the broker will not register, clients cannot find it")
	}
	bs.opts.Logger = log // the broker names its own component and its subsystems
	s := &servers{stdout: a.stdout, log: log, grpc: grpcOptions(bs, log), memoryLimitKey: bs.rt.MemoryLimitBytes}
	return s.run(a.ctx, a.stopSignals, nil, &bs.opts)
}

func brokerFlagsOf(c *cli.Context, withNamesrv bool) brokerFlags {
	f := brokerFlags{configFile: c.String(flagConfigFile)}
	if withNamesrv && c.IsSet(flagNamesrvAddr) {
		v := c.String(flagNamesrvAddr)
		f.namesrvAddr = &v
	}
	if c.IsSet(flagStoreDir) {
		v := c.String(flagStoreDir)
		f.storeDir = &v
	}
	if c.IsSet(flagListenPort) {
		v := c.Int(flagListenPort)
		f.listenPort = &v
	}
	if c.IsSet(flagBindAddress) {
		v := c.String(flagBindAddress)
		f.bindAddress = &v
	}
	if c.IsSet(flagSmallStore) {
		v := c.Bool(flagSmallStore)
		f.smallStore = &v
	}
	return f
}

// smallStoreFlag is --small-store (key smallStore): a store of a few MiB for
// tests and development.
var smallStoreFlag = &cli.BoolFlag{Name: flagSmallStore, Usage: "small store for tests and development: 4 MiB commitlog files, small queue and index files, no fallocate (key smallStore)"}

// dialHost is where a local client reaches a server bound to host: the
// host itself, or 127.0.0.1 for the wildcard.
func dialHost(host string) string {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return host
}

// printConfig handles -p and -m: it prints the effective configuration of
// whichever of ns and bs is non-nil and reports whether it did (the command
// then exits without starting anything, as the stock scripts do).
func (a *action) printConfig(c *cli.Context, ns *namesrv.Options, bs *brokerSettings) bool {
	all, imp := c.Bool(flagPrintAll), c.Bool(flagPrintImp)
	if !all && !imp {
		return false
	}
	both := ns != nil && bs != nil
	if ns != nil {
		if both {
			fmt.Fprintln(a.stdout, "# name server")
		}
		if all {
			conf.Print(a.stdout, ns)
		} else {
			conf.PrintKeys(a.stdout, importantNamesrvKeys, ns)
		}
	}
	if bs != nil {
		if both {
			fmt.Fprintln(a.stdout, "# broker")
		}
		if all {
			conf.Print(a.stdout, bs.confSources()...)
		} else {
			conf.PrintKeys(a.stdout, importantBrokerKeys, &bs.opts, &bs.grpc)
		}
	}
	return true
}
