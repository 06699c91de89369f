package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// adminFastForward is `rmq admin fastForward` (mqadmin fastForward in the
// image): rmq's own subcommand, no stock mqadmin has it. It moves the
// message clock of a broker started with clockControlEnable=true, or of
// every master of a cluster, ahead by -d, so that a test in any language
// gets its 30-minute delay level or 2-hour timer at once.
func adminFastForward() *cli.Command {
	return adminSub("fastForward", "Move the broker's message clock ahead (rmq; needs clockControlEnable=true): "+
		"delay levels, timers, transaction checks and POP invisible time due within it are delivered in due order", []cli.Flag{
		brokerFlag("broker address"),
		clusterFlag("every master of this cluster"),
		&cli.StringFlag{Name: "duration", Aliases: []string{"d"}, Required: true,
			Usage: "how far: a Go duration (30m, 2h, 1h30m) or milliseconds (1800000)"},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		d, err := admin.ParseFastForward(r.c.String("duration"))
		if err != nil {
			return err
		}
		// --timeout, when given, bounds each broker's jump; without it the
		// jump gets admin.FastForwardTimeout, longer than a plain request.
		var within time.Duration
		if r.c.IsSet(flagAdminTimeout) {
			within = r.c.Duration(flagAdminTimeout)
		}
		done, err := r.a.FastForward(r.ctx, addr, cluster, d, within)
		if perr := r.emit(map[string]any{"brokers": done}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "%s fast-forwarded %v: broker time %s (%d), clock offset %v\n", b.BrokerAddr, d,
					time.UnixMilli(b.BrokerTime).Format("2006-01-02 15:04:05,000"), b.BrokerTime,
					time.Duration(b.ClockOffsetMs)*time.Millisecond)
			}
		}); perr != nil {
			return perr
		}
		if err == nil && len(done) == 0 {
			return fmt.Errorf("no master broker in cluster %q", strings.TrimSpace(cluster))
		}
		return err
	})
}
