package main

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// The stats subcommands: statsAll, brokerConsumeStats and producer, read
// from the broker's BrokerStatsManager-style stats and client tables.

func adminStatsAll() *cli.Command {
	return adminSub("statsAll", "Topic and Consumer tps stats", []cli.Flag{
		&cli.BoolFlag{Name: "activeTopic", Aliases: []string{"a"}, Usage: "print active topic only"},
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "print select topic only"},
	}, func(r *adminRun) error {
		rows, err := r.a.StatsAll(r.ctx, strings.TrimSpace(r.c.String("topic")), r.c.Bool("activeTopic"))
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"rows": rows}, func(w io.Writer) { admin.PrintStatsAll(w, rows) })
	})
}

func adminBrokerConsumeStats() *cli.Command {
	return adminSub("brokerConsumeStats", "Fetch broker consume stats data", []cli.Flag{
		&cli.StringFlag{Name: "brokerAddr", Aliases: []string{"b"}, Usage: "Broker address", Required: true},
		&cli.StringFlag{Name: "timeoutMillis", Aliases: []string{"t"}, Usage: "request timeout Millis (a deadline for the whole command)"},
		&cli.StringFlag{Name: "level", Aliases: []string{"l"}, Usage: "threshold of print diff"},
		&cli.StringFlag{Name: "order", Aliases: []string{"o"}, Usage: "order topic"},
	}, func(r *adminRun) error {
		level, err := optInt64(r.c, "level", 0)
		if err != nil {
			return err
		}
		ctx := r.ctx
		if r.c.IsSet("timeoutMillis") {
			ms, err := optInt64(r.c, "timeoutMillis", 0)
			if err != nil {
				return err
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
			defer cancel()
		}
		res, err := r.a.BrokerConsumeStats(ctx, strings.TrimSpace(r.c.String("brokerAddr")), javaBool(r.c.String("order")), level)
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { res.Print(w) })
	})
}

func adminProducer() *cli.Command {
	return adminSub("producer", "Query producer's instances, connection, status, etc.", []cli.Flag{
		&cli.StringFlag{Name: "broker", Aliases: []string{"b"}, Usage: "broker address", Required: true},
	}, func(r *adminRun) error {
		groups, err := r.a.AllProducerInfo(r.ctx, strings.TrimSpace(r.c.String("broker")))
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"groups": groups}, func(w io.Writer) { admin.PrintProducers(w, groups) })
	})
}
