package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// The controller subcommands of mqadmin 5.3.3 (tools/command/controller,
// ha/GetSyncStateSetSubCommand, broker/GetBrokerEpochSubCommand), with
// their flag names and output lines.

func adminControllerCommands() []*cli.Command {
	return []*cli.Command{adminGetControllerMetaData(), adminGetSyncStateSet(), adminElectMaster(), adminGetBrokerEpoch()}
}

func controllerAddrFlag() cli.Flag {
	return &cli.StringFlag{Name: "controllerAddress", Aliases: []string{"a"}, Usage: "the address of controller", Required: true}
}

func adminGetControllerMetaData() *cli.Command {
	return adminSub("getControllerMetaData", "Get controller cluster's metadata.", []cli.Flag{controllerAddrFlag()}, func(r *adminRun) error {
		md, err := r.a.ControllerMetaData(r.ctx, strings.TrimSpace(r.c.String("controllerAddress")))
		if err != nil {
			return err
		}
		return r.emit(md, func(w io.Writer) { admin.PrintControllerMetaData(w, md) })
	})
}

func adminGetSyncStateSet() *cli.Command {
	return adminSub("getSyncStateSet", "Fetch syncStateSet for target brokers.", []cli.Flag{
		controllerAddrFlag(),
		&cli.StringFlag{Name: "clusterName", Aliases: []string{"c"}, Usage: "which cluster (broker names from the name server, -n)"},
		&cli.StringFlag{Name: "brokerName", Aliases: []string{"b"}, Usage: "which broker to fetch"},
	}, func(r *adminRun) error {
		var names []string
		switch {
		case r.c.IsSet("brokerName"):
			names = []string{strings.TrimSpace(r.c.String("brokerName"))}
		case r.c.IsSet("clusterName"):
			var err error
			if names, err = r.a.BrokerNamesOfCluster(r.ctx, strings.TrimSpace(r.c.String("clusterName"))); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: getSyncStateSet needs -b brokerName or -c clusterName", admin.ErrUsage)
		}
		info, err := r.a.SyncStateData(r.ctx, r.c.String("controllerAddress"), names)
		if err != nil {
			return err
		}
		return r.emit(info, func(w io.Writer) { admin.PrintSyncStateData(w, info) })
	})
}

func adminElectMaster() *cli.Command {
	return adminSub("electMaster", "Re-elect the specified broker as master.", []cli.Flag{
		controllerAddrFlag(),
		&cli.StringFlag{Name: "brokerId", Aliases: []string{"b"}, Usage: "The id of the broker which requires to become master", Required: true},
		&cli.StringFlag{Name: "brokerName", Aliases: []string{"bn"}, Usage: "The broker name of the replicas that require to be manipulated", Required: true},
		&cli.StringFlag{Name: "clusterName", Aliases: []string{"c"}, Usage: "the clusterName of broker", Required: true},
	}, func(r *adminRun) error {
		id, err := strconv.ParseInt(strings.TrimSpace(r.c.String("brokerId")), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: brokerId %q is not a number", admin.ErrUsage, r.c.String("brokerId"))
		}
		res, err := r.a.ElectMaster(r.ctx, r.c.String("controllerAddress"), strings.TrimSpace(r.c.String("clusterName")),
			strings.TrimSpace(r.c.String("brokerName")), id)
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { res.Print(w) })
	})
}

func adminGetBrokerEpoch() *cli.Command {
	return adminSub("getBrokerEpoch", "Fetch broker epoch entries.", []cli.Flag{
		&cli.StringFlag{Name: "clusterName", Aliases: []string{"c"}, Usage: "which cluster"},
		&cli.StringFlag{Name: "brokerName", Aliases: []string{"b"}, Usage: "which broker to fetch"},
	}, func(r *adminRun) error {
		cluster, name := strings.TrimSpace(r.c.String("clusterName")), strings.TrimSpace(r.c.String("brokerName"))
		if cluster == "" && name == "" {
			return fmt.Errorf("%w: getBrokerEpoch needs -b brokerName or -c clusterName", admin.ErrUsage)
		}
		es, err := r.a.BrokerEpochs(r.ctx, cluster, name)
		if err != nil {
			return err
		}
		return r.emit(es, func(w io.Writer) { admin.PrintBrokerEpochs(w, es) })
	})
}
