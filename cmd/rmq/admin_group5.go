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

func adminUpdateTopicList() *cli.Command {
	return adminSub("updateTopicList", "create or update topic in batch", []cli.Flag{
		brokerFlag("create topic to which broker"), clusterFlag("create topic to which cluster"),
		&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: "Path to a file with list of org.apache.rocketmq.common.TopicConfig in json format", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		b, ok, err := readListFile(r)
		if !ok {
			return err
		}
		list, err := admin.ParseTopicConfigList(b)
		if err != nil || len(list) == 0 {
			return err
		}
		done, err := r.a.UpdateTopicList(r.ctx, addr, cluster, list)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "topicConfigList": list}, submitted(done, "topic config"))
	})
}

func adminUpdateSubGroupList() *cli.Command {
	return adminSub("updateSubGroupList", "Update or create subscription group in batch.", []cli.Flag{
		brokerFlag("create groups to which broker"), clusterFlag("create groups to which cluster"),
		&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: "Path to a file with a list of org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		b, ok, err := readListFile(r)
		if !ok {
			return err
		}
		list, err := admin.ParseSubGroupConfigList(b)
		if err != nil || len(list) == 0 {
			return err
		}
		done, err := r.a.UpdateSubGroupList(r.ctx, addr, cluster, list)
		if err != nil {
			return err
		}
		what := "subscription group config" // stock words the -c line so, the -b line "group config"
		if addr != "" {
			what = "group config"
		}
		return r.emit(map[string]any{"brokers": done, "groupConfigList": list}, submitted(done, what))
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
