package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/topicgroup"
)

// The 5.3.3 batch and group subcommands: updateTopicList and
// updateSubGroupList as mqadmin 5.3.3 has them (tools/command/topic/
// UpdateTopicListSubCommand, consumer/UpdateSubGroupListSubCommand), and,
// named after the DefaultMQAdminExt methods no mqadmin subcommand calls,
// queryTopicsByConsumer, querySubscription and updateGroupForbidden.

func adminGroup5Commands() []*cli.Command {
	return []*cli.Command{adminUpdateTopicList(), adminUpdateSubGroupList(), adminQueryTopicsByConsumer(),
		adminQuerySubscription(), adminUpdateGroupForbidden()}
}

// readListFile is the stock commands' file handling: a missing file is said
// and is not an error (stock prints and returns).
func readListFile(r *adminRun) ([]byte, bool, error) {
	name := strings.TrimSpace(r.c.String("filename"))
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(r.out, "the file path %s does not exists\n", name)
		return nil, false, nil
	}
	return b, err == nil, err
}

// submitted prints the stock lines of updateTopicList / updateSubGroupList.
func submitted(done []string, what string) func(io.Writer) {
	return func(w io.Writer) {
		for _, b := range done {
			fmt.Fprintf(w, "submit batch of %s to %s success, please check the result later.\n", what, b)
		}
	}
}

// listSub is updateTopicList and updateSubGroupList: -b or -c, the file -f
// (a missing one said, an empty list doing nothing, as stock), parsed by
// parse and sent by send; key names the list in --json output, what(addr)
// is the noun of the stock line.
func listSub[T any](name, usage, target, fileUsage, key string, parse func([]byte) ([]*T, error),
	send func(r *adminRun, addr, cluster string, list []*T) ([]string, error), what func(addr string) string) *cli.Command {
	return adminSub(name, usage, []cli.Flag{
		brokerFlag("create " + target + " to which broker"), clusterFlag("create " + target + " to which cluster"),
		&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: fileUsage, Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		b, ok, err := readListFile(r)
		if !ok {
			return err
		}
		list, err := parse(b)
		if err != nil || len(list) == 0 {
			return err
		}
		done, err := send(r, addr, cluster, list)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, key: list}, submitted(done, what(addr)))
	})
}

func adminUpdateTopicList() *cli.Command {
	return listSub("updateTopicList", "create or update topic in batch", "topic",
		"Path to a file with list of org.apache.rocketmq.common.TopicConfig in json format", "topicConfigList",
		admin.ParseTopicConfigList, func(r *adminRun, addr, cluster string, list []*topicgroup.TopicConfig) ([]string, error) {
			return r.a.UpdateTopicList(r.ctx, addr, cluster, list)
		}, func(string) string { return "topic config" })
}

func adminUpdateSubGroupList() *cli.Command {
	return listSub("updateSubGroupList", "Update or create subscription group in batch.", "groups",
		"Path to a file with a list of org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format",
		"groupConfigList", admin.ParseSubGroupConfigList,
		func(r *adminRun, addr, cluster string, list []*topicgroup.SubscriptionGroupConfig) ([]string, error) {
			return r.a.UpdateSubGroupList(r.ctx, addr, cluster, list)
		}, func(addr string) string {
			if addr != "" {
				return "group config"
			}
			return "subscription group config" // stock words the -c line so
		})
}

func adminQueryTopicsByConsumer() *cli.Command {
	return adminSub("queryTopicsByConsumer", "Topics a consumer group has offsets for, on every broker of its retry topic's route (QUERY_TOPICS_BY_CONSUMER).",
		[]cli.Flag{groupFlag("consumer group name")}, func(r *adminRun) error {
			tl, err := r.a.QueryTopicsByConsumer(r.ctx, strings.TrimSpace(r.c.String("group")))
			if err != nil {
				return err
			}
			return r.emit(tl, func(w io.Writer) {
				for _, t := range tl.TopicList {
					fmt.Fprintln(w, t)
				}
			})
		})
}

func adminQuerySubscription() *cli.Command {
	return adminSub("querySubscription", "A consumer group's subscription of a topic as its online consumers declared it (QUERY_SUBSCRIPTION_BY_CONSUMER).",
		[]cli.Flag{groupFlag("consumer group name"), topicFlag()}, func(r *adminRun) error {
			sd, err := r.a.QuerySubscription(r.ctx, strings.TrimSpace(r.c.String("group")), strings.TrimSpace(r.c.String("topic")))
			if err != nil {
				return err
			}
			return r.emit(sd, func(w io.Writer) {
				if sd == nil {
					fmt.Fprintln(w, "no subscription")
					return
				}
				fmt.Fprintf(w, "topic=%s expressionType=%s subString=%s subVersion=%d\n", sd.Topic, sd.ExpressionType, sd.SubString, sd.SubVersion)
			})
		})
}

func adminUpdateGroupForbidden() *cli.Command {
	return adminSub("updateGroupForbidden", "Forbid or allow a consumer group to read a topic on a broker, then show it (UPDATE_AND_GET_GROUP_FORBIDDEN).",
		[]cli.Flag{
			&cli.StringFlag{Name: "brokerAddr", Aliases: []string{"b"}, Usage: "broker address", Required: true},
			groupFlag("consumer group name"), topicFlag(),
			&cli.StringFlag{Name: "readable", Aliases: []string{"r"}, Usage: "true or false: whether the group may read the topic (absent: only show it)"},
		}, func(r *adminRun) error {
			var readable *bool
			if r.c.IsSet("readable") {
				v := javaBool(r.c.String("readable"))
				readable = &v
			}
			gf, err := r.a.UpdateGroupForbidden(r.ctx, strings.TrimSpace(r.c.String("brokerAddr")),
				strings.TrimSpace(r.c.String("group")), strings.TrimSpace(r.c.String("topic")), readable)
			if err != nil {
				return err
			}
			return r.emit(gf, func(w io.Writer) {
				fmt.Fprintf(w, "group=%s topic=%s readable=%t\n", gf.Group, gf.Topic, gf.Readable)
			})
		})
}
