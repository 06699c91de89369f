package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// retentionAdminCommands are mqadmin deleteExpiredCommitLog and
// cleanExpiredCQ.
func retentionAdminCommands() []*cli.Command {
	return []*cli.Command{
		retentionSub("deleteExpiredCommitLog", "Delete expired CommitLog files", "delete expired commitlog",
			func(a *admin.Admin) func(context.Context, string, string) ([]string, error) {
				return a.DeleteExpiredCommitLog
			}),
		retentionSub("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", "clean expired consume queue",
			func(a *admin.Admin) func(context.Context, string, string) ([]string, error) { return a.CleanExpiredCQ }),
	}
}

func retentionSub(name, usage, what string, call func(*admin.Admin) func(context.Context, string, string) ([]string, error)) *cli.Command {
	return adminSub(name, usage, []cli.Flag{
		brokerFlag("broker address"),
		clusterFlag("every master of this cluster (default: every broker)"),
	}, func(r *adminRun) error {
		addr, cluster := strings.TrimSpace(r.c.String("brokerAddr")), strings.TrimSpace(r.c.String("clusterName"))
		if addr != "" && cluster != "" {
			return fmt.Errorf("%w: -b and -c exclude each other", admin.ErrUsage)
		}
		done, err := call(r.a)(r.ctx, addr, cluster)
		if perr := r.emit(map[string]any{"brokers": done}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "%s %s success\n", b, what)
			}
		}); perr != nil {
			return perr
		}
		return err
	})
}
