package main

import (
	"fmt"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/namesrv"
)

// `rmq controller -c controller.conf` is mqcontroller: a controller node
// of a group (package controller) configured by the stock ControllerConfig
// keys. `rmq namesrv` with enableControllerInNamesrv runs one on the name
// server's port (namesrvController).

func init() {
	registerCommand(func(a *action) *cli.Command {
		return &cli.Command{
			Name:  "controller",
			Usage: "run a controller node (RocketMQ 5 controller mode: broker ids, master election, sync state sets)",
			Flags: append(commonFlags("controller config file (controller.conf format: controllerDLegerGroup, controllerDLegerPeers, controllerDLegerSelfId, …)"),
				&cli.IntFlag{Name: flagListenPort, Usage: "remoting port brokers and tools dial (the Raft transport listens on this node's peer address)", DefaultText: "listenPort from the config file, else 19876"},
				&cli.StringFlag{Name: flagBindAddress, Usage: "address the remoting port listens on", DefaultText: "bindAddress from the config file, else 0.0.0.0"},
			),
			Action: a.controller,
		}
	})
}

// importantControllerKeys are printed by -m.
var importantControllerKeys = []string{"controllerType", "controllerDLegerGroup", "controllerDLegerPeers", "controllerDLegerSelfId",
	"controllerStorePath", "listenPort", "enableElectUncleanMaster", "notifyBrokerRoleChanged"}

// controllerConfSources are the structs a controller.conf binds to.
func controllerConfSources(opts *controller.Options, logs *logSettings) []any {
	return []any{opts, logs}
}

func loadControllerSettings(c *cli.Context, log zerolog.Logger) (*controller.Options, error) {
	opts := controller.DefaultOptions()
	if f := c.String(flagConfigFile); f != "" {
		logs := defaultLogSettings()
		warnings, err := conf.LoadFile(f, controllerConfSources(&opts, &logs)...)
		for _, w := range warnings {
			log.Warn().Msg(w)
		}
		if err != nil {
			return nil, err
		}
		log.Info().Str("file", f).Msg("loaded controller config")
	}
	if c.IsSet(flagListenPort) {
		opts.ListenPort = c.Int(flagListenPort)
	}
	if c.IsSet(flagBindAddress) {
		opts.ListenHost = c.String(flagBindAddress)
	}
	return &opts, nil
}

func (a *action) controller(c *cli.Context) error {
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	defer a.closeLog()
	opts, err := loadControllerSettings(c, log)
	if err != nil {
		return err
	}
	if all, imp := c.Bool(flagPrintAll), c.Bool(flagPrintImp); all || imp {
		if all {
			conf.Print(a.stdout, opts)
		} else {
			conf.PrintKeys(a.stdout, importantControllerKeys, opts)
		}
		return nil
	}
	opts.Logger = log.With().Str("component", "controller").Logger()
	ctl, err := controller.New(*opts)
	if err != nil {
		return err
	}
	if err := ctl.Start(); err != nil {
		return err
	}
	// Stock ControllerStartup line; scripts grep for "boot success".
	fmt.Fprintln(a.stdout, "The Controller Server boot success. serializeType=JSON")
	log.Info().Str("addr", ctl.Addr()).Str("id", ctl.ID()).Msg("controller serving")
	<-a.ctx.Done()
	a.stopSignals()
	log.Info().Msg("shutting down (signal again to force)")
	ctl.Shutdown()
	return nil
}

// namesrvController builds the controller of a name server started with
// enableControllerInNamesrv: the controller keys of the same file, served
// on the name server's port. It returns nil when the key is off. Start it
// once the name server listens (startNamesrvController).
func namesrvController(nsOpts *namesrv.Options, file string, log zerolog.Logger) (*controller.Controller, error) {
	if !nsOpts.EnableControllerInNamesrv {
		return nil, nil
	}
	opts := controller.DefaultOptions()
	if file != "" {
		// The name server's load reported the file's problems already.
		if _, err := conf.LoadFile(file, &opts.Config); err != nil {
			return nil, err
		}
	}
	opts.NoListener = true
	opts.Logger = log.With().Str("component", "controller").Logger()
	ctl, err := controller.New(opts)
	if err != nil {
		return nil, err
	}
	nsOpts.Controller = ctl
	return ctl, nil
}
