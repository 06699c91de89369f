package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/message"
)

// `rmq bench produce|consume|timer` drives package bench.

func init() {
	registerCommand(func(a *action) *cli.Command { return withProcessContext(benchCommand(), a.ctx) })
}

// errBenchFailed reports a run that completed without doing its job.
var errBenchFailed = errors.New("bench: run failed")

func benchCommonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "namesrvAddr", Aliases: []string{"n"}, EnvVars: []string{"NAMESRV_ADDR"}, Usage: "name server address list, e.g. 127.0.0.1:9876"},
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Value: message.TopicBenchmark, Usage: "topic (created by auto-creation when it has no route)"},
		&cli.IntFlag{Name: "connections", Aliases: []string{"c"}, Value: 2, Usage: "TCP connections per broker"},
		&cli.IntFlag{Name: "inflight", Aliases: []string{"w"}, Value: 64, Usage: "requests in flight per connection"},
		&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Value: 10 * time.Second, Usage: "how long to send (consume: to run)"},
		&cli.Int64Flag{Name: "count", Usage: "stop after this many messages (0: duration only)"},
		&cli.StringFlag{Name: "header", Value: "rocketmq", Usage: "request header encoding: rocketmq (binary, as the stock benchmark) or json"},
		&cli.DurationFlag{Name: "report-interval", Value: time.Second, Usage: "progress line period (0 disables)"},
		&cli.BoolFlag{Name: "json", Usage: "print the final summary as JSON (progress lines then go to stderr)"},
		&cli.BoolFlag{Name: flagTLS, Usage: "connect over TLS, trusting any server certificate"},
	}
}

func sendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "size", Aliases: []string{"s"}, Value: 128, Usage: "message body size in bytes"},
		&cli.BoolFlag{Name: "v1-header", Usage: "send SEND_MESSAGE (10) with long header names (Go client style) instead of SEND_MESSAGE_V2 (310)"},
		&cli.DurationFlag{Name: "send-timeout", Value: 3 * time.Second, Usage: "timeout of each send"},
	}
}

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:   "bench",
		Usage:  "load generator for any RocketMQ-compatible broker: produce, consume, timer",
		Action: dispatchAction("rmq bench"),
		Subcommands: []*cli.Command{
			{
				Name:   "produce",
				Usage:  "send as fast as the in-flight window allows",
				Flags:  append(benchCommonFlags(), sendFlags()...),
				Action: func(c *cli.Context) error { return runBench(c, bench.ModeProduce) },
			},
			{
				Name:  "consume",
				Usage: "long-poll every queue of the topic",
				Flags: append(benchCommonFlags(),
					&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Value: "rmq_bench_consumer", Usage: "consumer group"},
					&cli.StringFlag{Name: "from", Value: "max", Usage: "start at each queue's max offset (new messages only) or min (everything stored)"},
				),
				Action: func(c *cli.Context) error { return runBench(c, bench.ModeConsume) },
			},
			{
				Name:  "timer",
				Usage: "send timer (TIMER_DELIVER_MS) or delay-level (DELAY) messages and measure delivery lateness",
				Flags: append(append(benchCommonFlags(), sendFlags()...),
					&cli.DurationFlag{Name: "delay", Value: time.Second, Usage: "timer delay: each message is due this long after its send ..."},
					&cli.DurationFlag{Name: "spread", Usage: "... plus a uniform share of this window"},
					&cli.IntFlag{Name: "delay-level", Usage: "use delay level N (DELAY property) instead of a timer"},
					&cli.StringFlag{Name: "delay-levels", Value: bench.DefaultDelayLevels, Usage: "the broker's messageDelayLevel, to know when a level is due"},
					&cli.DurationFlag{Name: "grace", Usage: "how long to wait after the last send for deliveries", DefaultText: "the longest delay + 30s"},
					&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Value: "rmq_bench_consumer", Usage: "consumer group"},
				),
				Action: func(c *cli.Context) error { return runBench(c, bench.ModeTimer) },
			},
		},
	}
}

func runBench(c *cli.Context, mode bench.Mode) error {
	if c.NArg() > 0 {
		return fmt.Errorf("bench %s: unexpected argument %q", mode, c.Args().First())
	}
	// The load generator allocates per request as a broker does (a
	// consumer a 32-message body per pull), with a live heap as small: at
	// GOGC=100 it collected so often that draining a 1 000 000-message
	// backlog cost it 2.0 user CPU-s instead of 1.0, and it, not the broker,
	// bounded the drain (265-275k against 360k msg/s at GOGC=400).
	tuneRuntime(os.Getenv, zerolog.Nop(), false, serverMemoryLimit)
	o := bench.Options{
		Mode: mode, NamesrvAddr: c.String("namesrvAddr"), Topic: c.String("topic"),
		Connections: c.Int("connections"), InFlight: c.Int("inflight"),
		Duration: c.Duration("duration"), Count: c.Int64("count"),
		ReportInterval: c.Duration("report-interval"), Out: c.App.Writer,
		MessageSize: c.Int("size"), V1Header: c.Bool("v1-header"), SendTimeout: c.Duration("send-timeout"),
		Group: c.String("group"), From: c.String("from"),
		TimerDelay: c.Duration("delay"), TimerSpread: c.Duration("spread"),
		DelayLevel: c.Int("delay-level"), DelayLevels: c.String("delay-levels"), Grace: c.Duration("grace"),
		TLS: clientTLS(c),
	}
	if len(admin.SplitAddrs(o.NamesrvAddr)) == 0 {
		return fmt.Errorf("bench %s: %w", mode, admin.ErrNoNamesrv)
	}
	switch c.String("header") {
	case "rocketmq":
	case "json":
		o.JSONHeader = true
	default:
		return fmt.Errorf("bench %s: --header %q is neither rocketmq nor json", mode, c.String("header"))
	}
	if c.Bool("json") {
		// stdout carries the JSON summary alone, for jq and friends.
		o.Out = c.App.ErrWriter
	}
	if o.ReportInterval == 0 {
		o.ReportInterval = -1
	}
	sum, err := bench.Run(c.Context, o)
	if err != nil {
		return fmt.Errorf("bench %s: %w", mode, err)
	}
	if c.Bool("json") {
		if err := admin.WriteJSON(c.App.Writer, sum); err != nil {
			return err
		}
	} else {
		sum.Print(c.App.Writer)
	}
	switch {
	case mode != bench.ModeConsume && sum.Sent == 0:
		return fmt.Errorf("%w: no message was stored (%d sends failed)", errBenchFailed, sum.SendFailed)
	case mode == bench.ModeTimer && sum.Lost > 0:
		return fmt.Errorf("%w: %d of %d messages were not delivered within the grace period", errBenchFailed, sum.Lost, sum.Sent)
	}
	return nil
}
