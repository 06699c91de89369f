package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// `rmq admin` mirrors mqadmin: the stock subcommand names and one-letter
// flags. Flags that take "true"/"false" in mqadmin (-o true) stay string
// flags so the stock spelling parses. Every subcommand also takes -n (name
// servers, default $NAMESRV_ADDR), --json and --timeout.

func init() {
	registerCommand(func(a *action) *cli.Command { return withProcessContext(adminCommand(), a.ctx) })
}

// withProcessContext makes ctx (which ends at SIGINT/SIGTERM) the context
// of cmd and its subcommands.
func withProcessContext(cmd *cli.Command, ctx context.Context) *cli.Command {
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if ctx != nil {
			c.Context = ctx
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	return cmd
}

const (
	flagAdminNamesrv = "namesrvAddr"
	flagAdminJSON    = "json"
	flagAdminTimeout = "timeout"
	flagTLS          = "tls"
	// ACL credentials (mqadmin reads them from conf/tools.yml).
	flagAdminAccessKey = "access-key"
	flagAdminSecretKey = "secret-key"
)

func adminCommonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagAdminNamesrv, Aliases: []string{"n"}, EnvVars: []string{"NAMESRV_ADDR"}, Usage: "name server address list, e.g. 127.0.0.1:9876;192.168.0.1:9876"},
		&cli.BoolFlag{Name: flagAdminJSON, Usage: "print the result as JSON (consumeMessage and printMsg: one JSON object per message)"},
		&cli.DurationFlag{Name: flagAdminTimeout, Value: admin.DefaultTimeout, Usage: "timeout of each request"},
		&cli.StringFlag{Name: flagAdminAccessKey, EnvVars: []string{"RMQ_ACCESS_KEY"}, Usage: "sign requests with this ACL AccessKey (for a broker with aclEnable=true)"},
		&cli.StringFlag{Name: flagAdminSecretKey, EnvVars: []string{"RMQ_SECRET_KEY"}, Usage: "the SecretKey of --access-key"},
		&cli.BoolFlag{Name: flagTLS, Usage: "connect over TLS, trusting any server certificate (as the Java client's tls.enable)"},
	}
}

// clientTLS is the client TLS configuration --tls asks for, or nil.
func clientTLS(c *cli.Context) *tls.Config {
	if !c.Bool(flagTLS) {
		return nil
	}
	return remoting.ClientTLS()
}

// adminRun is the state of one admin subcommand run.
type adminRun struct {
	c    *cli.Context
	ctx  context.Context
	a    *admin.Admin
	out  io.Writer
	json bool
}

// emit prints v as JSON in --json mode, or calls text otherwise.
func (r *adminRun) emit(v any, text func(io.Writer)) error {
	if r.json {
		return admin.WriteJSON(r.out, v)
	}
	text(r.out)
	return nil
}

func adminSub(name, usage string, flags []cli.Flag, run func(*adminRun) error) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: usage,
		Flags: append(flags, adminCommonFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%s: unexpected argument %q (flags go before it; see --help)", name, c.Args().First())
			}
			a := admin.New(admin.Options{
				NamesrvAddr: c.String(flagAdminNamesrv), Timeout: c.Duration(flagAdminTimeout), TLS: clientTLS(c),
				AccessKey: c.String(flagAdminAccessKey), SecretKey: c.String(flagAdminSecretKey),
			})
			defer a.Close()
			ctx := c.Context
			if ctx == nil {
				ctx = context.Background()
			}
			r := &adminRun{c: c, ctx: ctx, a: a, out: c.App.Writer, json: c.Bool(flagAdminJSON)}
			if err := run(r); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		},
	}
}

// javaBool is Boolean.parseBoolean.
func javaBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// brokerOrCluster reads -b / -c, one of which is required.
func brokerOrCluster(c *cli.Context) (addr, cluster string, err error) {
	addr, cluster = strings.TrimSpace(c.String("brokerAddr")), strings.TrimSpace(c.String("clusterName"))
	if addr == "" && cluster == "" {
		return "", "", fmt.Errorf("%w: one of -b (broker address) and -c (cluster name) is required", admin.ErrUsage)
	}
	if addr != "" && cluster != "" {
		return "", "", fmt.Errorf("%w: -b and -c exclude each other", admin.ErrUsage)
	}
	return addr, cluster, nil
}

func brokerFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "brokerAddr", Aliases: []string{"b"}, Usage: usage}
}

func clusterFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "clusterName", Aliases: []string{"c"}, Usage: usage}
}

func topicFlag() cli.Flag {
	return &cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic name", Required: true}
}

// optInt32 parses an optional integer flag.
func optInt32(c *cli.Context, name string, def int32) (int32, error) {
	if !c.IsSet(name) {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(c.String(name)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: -%s %q is not an integer", admin.ErrUsage, name, c.String(name))
	}
	return int32(n), nil
}

func optInt64(c *cli.Context, name string, def int64) (int64, error) {
	if !c.IsSet(name) {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(c.String(name)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: -%s %q is not an integer", admin.ErrUsage, name, c.String(name))
	}
	return n, nil
}

func adminCommand() *cli.Command {
	cmd := &cli.Command{
		Name:   "admin",
		Usage:  "mqadmin: administer name servers and brokers (stock subcommand names and flags)",
		Action: dispatchAction("rmq admin"),
		Subcommands: append([]*cli.Command{
			adminUpdateTopic(), adminDeleteTopic(), adminTopicList(), adminTopicRoute(), adminTopicStatus(),
			adminClusterList(), adminBrokerStatus(),
			adminUpdateSubGroup(), adminDeleteSubGroup(), adminConsumerProgress(), adminConsumerConnection(),
			adminQueryMsgByID(), adminQueryMsgByKey(), adminSendMessage(), adminConsumeMessage(), adminPrintMsg(),
			adminGetBrokerConfig(), adminUpdateBrokerConfig(),
			adminTimerStatus(), adminRecallMessage(),
			adminStatsAll(), adminBrokerConsumeStats(), adminProducer(),
			adminUpdateAclConfig(), adminDeleteAclConfig(), adminClusterAclConfigVersion(), adminUpdateGlobalWhiteAddr(),
		}, adminCodesCommands()...),
	}
	cmd.Subcommands = append(cmd.Subcommands, retentionAdminCommands()...)
	cmd.Subcommands = append(cmd.Subcommands, adminFastForward())
	cmd.Subcommands = append(cmd.Subcommands, adminAuthCommands()...)
	cmd.Subcommands = append(cmd.Subcommands, adminControllerCommands()...)
	cmd.Subcommands = append(cmd.Subcommands, adminGroup5Commands()...)
	return cmd
}

func adminUpdateTopic() *cli.Command {
	return adminSub("updateTopic", "Update or create topic", []cli.Flag{
		brokerFlag("create topic to which broker"),
		clusterFlag("create topic to which cluster"),
		topicFlag(),
		&cli.StringFlag{Name: "readQueueNums", Aliases: []string{"r"}, Usage: "set read queue nums (default 8)"},
		&cli.StringFlag{Name: "writeQueueNums", Aliases: []string{"w"}, Usage: "set write queue nums (default 8)"},
		&cli.StringFlag{Name: "perm", Aliases: []string{"p"}, Usage: "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW] (default 6)"},
		&cli.StringFlag{Name: "order", Aliases: []string{"o"}, Usage: "set topic's order(true|false)"},
		&cli.StringFlag{Name: "unit", Aliases: []string{"u"}, Usage: "is unit topic (true|false)"},
		&cli.StringFlag{Name: "hasUnitSub", Aliases: []string{"s"}, Usage: "has unit sub (true|false)"},
	}, func(r *adminRun) error {
		c := r.c
		addr, cluster, err := brokerOrCluster(c)
		if err != nil {
			return err
		}
		spec := admin.TopicSpec{
			TopicName:    strings.TrimSpace(c.String("topic")),
			TopicSysFlag: admin.TopicSysFlag(javaBool(c.String("unit")), javaBool(c.String("hasUnitSub"))),
			Order:        javaBool(c.String("order")),
		}
		if spec.ReadQueueNums, err = optInt32(c, "readQueueNums", 8); err != nil {
			return err
		}
		if spec.WriteQueueNums, err = optInt32(c, "writeQueueNums", 8); err != nil {
			return err
		}
		if spec.Perm, err = optInt32(c, "perm", topicgroup.PermRead|topicgroup.PermWrite); err != nil {
			return err
		}
		res, err := r.a.UpdateTopic(r.ctx, spec, addr, cluster)
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { res.Print(w, addr != "") })
	})
}

func adminDeleteTopic() *cli.Command {
	return adminSub("deleteTopic", "Delete topic from broker and NameServer.", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "clusterName", Aliases: []string{"c"}, Usage: "delete topic from which cluster", Required: true},
	}, func(r *adminRun) error {
		res, err := r.a.DeleteTopic(r.ctx, strings.TrimSpace(r.c.String("clusterName")), strings.TrimSpace(r.c.String("topic")))
		if err != nil {
			return err
		}
		return r.emit(res, res.Print)
	})
}

func adminTopicList() *cli.Command {
	return adminSub("topicList", "Fetch all topic list from name server", []cli.Flag{
		&cli.BoolFlag{Name: "clusterModel", Aliases: []string{"c"}, Usage: "print the cluster and consumer groups of each topic"},
	}, func(r *adminRun) error {
		if r.c.Bool("clusterModel") {
			rows, err := r.a.TopicClusterList(r.ctx)
			if err != nil {
				return err
			}
			return r.emit(map[string]any{"topics": rows}, func(w io.Writer) { admin.PrintTopicClusterList(w, rows) })
		}
		topics, err := r.a.TopicList(r.ctx)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"topicList": topics}, func(w io.Writer) {
			for _, t := range topics {
				fmt.Fprintln(w, t)
			}
		})
	})
}

func adminTopicRoute() *cli.Command {
	return adminSub("topicRoute", "Examine topic route info", []cli.Flag{
		topicFlag(),
		&cli.BoolFlag{Name: "list", Aliases: []string{"l"}, Usage: "Use list format to print data"},
	}, func(r *adminRun) error {
		rd, err := r.a.Route(r.ctx, strings.TrimSpace(r.c.String("topic")))
		if err != nil {
			return err
		}
		if r.json || !r.c.Bool("list") {
			return admin.WriteJSON(r.out, rd)
		}
		return admin.PrintRouteList(r.out, rd)
	})
}

func adminTopicStatus() *cli.Command {
	return adminSub("topicStatus", "Examine topic Status info", []cli.Flag{topicFlag()}, func(r *adminRun) error {
		topic := strings.TrimSpace(r.c.String("topic"))
		rows, err := r.a.TopicStatus(r.ctx, topic)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"topic": topic, "queues": rows}, func(w io.Writer) { admin.PrintTopicStatus(w, rows) })
	})
}

func adminClusterList() *cli.Command {
	return adminSub("clusterList", "List all of clusters", []cli.Flag{
		&cli.BoolFlag{Name: "moreStats", Aliases: []string{"m"}, Usage: "Print more stats"},
		&cli.StringFlag{Name: "interval", Aliases: []string{"i"}, Usage: "print again every this many seconds, until interrupted"},
		&cli.BoolFlag{Name: "replication", Usage: "print each broker's role and replication lag in bytes instead (rmq only)"},
	}, func(r *adminRun) error {
		interval, err := optInt64(r.c, "interval", 0)
		if err != nil {
			return err
		}
		ctx := r.ctx
		for {
			l, err := r.a.ClusterList(ctx)
			if l != nil {
				out := func(w io.Writer) { l.Print(w, r.c.Bool("moreStats")) }
				if r.c.Bool("replication") {
					out = l.PrintReplication
				}
				if perr := r.emit(l, out); perr != nil {
					return perr
				}
			}
			if interval <= 0 {
				return err
			}
			if err != nil && l == nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Duration(interval) * time.Second):
			}
		}
	})
}

func adminBrokerStatus() *cli.Command {
	return adminSub("brokerStatus", "Fetch broker runtime status data", []cli.Flag{
		brokerFlag("Broker address"),
		clusterFlag("which cluster"),
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		sts, err := r.a.BrokerStatuses(r.ctx, addr, cluster)
		if sts == nil {
			return err
		}
		if perr := r.emit(sts, func(w io.Writer) { admin.PrintBrokerStatuses(w, sts, addr == "") }); perr != nil {
			return perr
		}
		return err
	})
}

func adminUpdateSubGroup() *cli.Command {
	return adminSub("updateSubGroup", "Update or create subscription group", []cli.Flag{
		brokerFlag("create subscription group to which broker"),
		clusterFlag("create subscription group to which cluster"),
		&cli.StringFlag{Name: "groupName", Aliases: []string{"g"}, Usage: "consumer group name", Required: true},
		&cli.StringFlag{Name: "consumeEnable", Aliases: []string{"s"}, Usage: "consume enable"},
		&cli.StringFlag{Name: "consumeFromMinEnable", Aliases: []string{"m"}, Usage: "from min offset"},
		&cli.StringFlag{Name: "consumeBroadcastEnable", Aliases: []string{"d"}, Usage: "broadcast"},
		&cli.StringFlag{Name: "consumeMessageOrderly", Aliases: []string{"o"}, Usage: "consume message orderly"},
		&cli.StringFlag{Name: "retryQueueNums", Aliases: []string{"q"}, Usage: "retry queue nums"},
		&cli.StringFlag{Name: "retryMaxTimes", Aliases: []string{"r"}, Usage: "retry max times"},
		&cli.StringFlag{Name: "groupRetryPolicy", Aliases: []string{"p"}, Usage: `the json string of retry policy ( exp: {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} {"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}} )`},
		&cli.StringFlag{Name: "brokerId", Aliases: []string{"i"}, Usage: "consumer from which broker id"},
		&cli.StringFlag{Name: "whichBrokerWhenConsumeSlowly", Aliases: []string{"w"}, Usage: "which broker id when consume slowly"},
		&cli.StringFlag{Name: "notifyConsumerIdsChanged", Aliases: []string{"a"}, Usage: "notify consumerId changed"},
	}, func(r *adminRun) error {
		c := r.c
		addr, cluster, err := brokerOrCluster(c)
		if err != nil {
			return err
		}
		cfg := topicgroup.NewSubscriptionGroupConfig(strings.TrimSpace(c.String("groupName")))
		// mqadmin starts from these two off, unlike the broker's defaults.
		cfg.ConsumeBroadcastEnable = false
		cfg.ConsumeFromMinEnable = false
		for name, dst := range map[string]*bool{
			"consumeEnable": &cfg.ConsumeEnable, "consumeFromMinEnable": &cfg.ConsumeFromMinEnable,
			"consumeBroadcastEnable": &cfg.ConsumeBroadcastEnable, "notifyConsumerIdsChanged": &cfg.NotifyConsumerIdsChangedEnable,
			"consumeMessageOrderly": &cfg.ConsumeMessageOrderly, // 5.x UpdateSubGroupSubCommand -o
		} {
			if c.IsSet(name) {
				*dst = javaBool(c.String(name))
			}
		}
		if cfg.RetryQueueNums, err = optInt32(c, "retryQueueNums", cfg.RetryQueueNums); err != nil {
			return err
		}
		if cfg.RetryMaxTimes, err = optInt32(c, "retryMaxTimes", cfg.RetryMaxTimes); err != nil {
			return err
		}
		if c.IsSet("groupRetryPolicy") { // 5.x -p: the policy as JSON, sent in the body
			p := &topicgroup.GroupRetryPolicy{}
			if err := json.Unmarshal([]byte(strings.TrimSpace(c.String("groupRetryPolicy"))), p); err != nil {
				return fmt.Errorf("groupRetryPolicy: %w", err)
			}
			cfg.GroupRetryPolicy = p
		}
		if cfg.BrokerID, err = optInt64(c, "brokerId", cfg.BrokerID); err != nil {
			return err
		}
		if cfg.WhichBrokerWhenConsumeSlowly, err = optInt64(c, "whichBrokerWhenConsumeSlowly", cfg.WhichBrokerWhenConsumeSlowly); err != nil {
			return err
		}
		done, err := r.a.UpdateSubGroup(r.ctx, cfg, addr, cluster)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "subscriptionGroupConfig": cfg}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "create subscription group to %s success.\n", b)
			}
			fmt.Fprintf(w, "%s\n", admin.SubGroupString(cfg))
		})
	})
}

func adminDeleteSubGroup() *cli.Command {
	return adminSub("deleteSubGroup", "Delete subscription group from broker.", []cli.Flag{
		brokerFlag("delete subscription group from which broker"),
		clusterFlag("delete subscription group from which cluster"),
		&cli.StringFlag{Name: "groupName", Aliases: []string{"g"}, Usage: "subscription group name", Required: true},
		&cli.StringFlag{Name: "removeOffset", Aliases: []string{"r"}, Usage: "remove offset"},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		res, err := r.a.DeleteSubGroup(r.ctx, strings.TrimSpace(r.c.String("groupName")), addr, cluster, javaBool(r.c.String("removeOffset")))
		if err != nil {
			return err
		}
		return r.emit(res, res.Print)
	})
}

func adminConsumerProgress() *cli.Command {
	return adminSub("consumerProgress", "Query consumers's progress, speed", []cli.Flag{
		&cli.StringFlag{Name: "groupName", Aliases: []string{"g"}, Usage: "consumer group name"},
		&cli.StringFlag{Name: "showClientIP", Aliases: []string{"s"}, Usage: "Show Client IP per Queue"},
	}, func(r *adminRun) error {
		group := strings.TrimSpace(r.c.String("groupName"))
		if group == "" {
			rows, err := r.a.GroupSummaries(r.ctx)
			if err != nil {
				return err
			}
			return r.emit(map[string]any{"groups": rows}, func(w io.Writer) { admin.PrintGroupSummaries(w, rows) })
		}
		cs, err := r.a.ConsumeStats(r.ctx, group, "")
		if err != nil {
			return err
		}
		showIP := javaBool(r.c.String("showClientIP"))
		if showIP {
			alloc := r.a.QueueAllocation(r.ctx, group)
			for i := range cs.Queues {
				cs.Queues[i].ClientIP = alloc[cs.Queues[i].MessageQueue]
			}
		}
		return r.emit(cs, func(w io.Writer) { admin.PrintConsumeStats(w, cs, showIP) })
	})
}

func adminConsumerConnection() *cli.Command {
	return adminSub("consumerConnection", "Query consumer's socket connection, client version and subscription", []cli.Flag{
		&cli.StringFlag{Name: "consumerGroup", Aliases: []string{"g"}, Usage: "consumer group name", Required: true},
		brokerFlag("broker address"),
	}, func(r *adminRun) error {
		cc, err := r.a.ConsumerConnection(r.ctx, strings.TrimSpace(r.c.String("consumerGroup")), strings.TrimSpace(r.c.String("brokerAddr")))
		if err != nil {
			return err
		}
		return r.emit(cc, func(w io.Writer) { admin.PrintConsumerConnection(w, cc) })
	})
}

func adminQueryMsgByID() *cli.Command {
	return adminSub("queryMsgById", "Query Message by Id", []cli.Flag{
		&cli.StringFlag{Name: "msgId", Aliases: []string{"i"}, Usage: "Message Id (offset id; comma-separated for several)", Required: true},
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic, to look an id up as a unique key (client id) when it is not an offset id"},
	}, func(r *adminRun) error {
		var details []*admin.MessageDetail
		for _, id := range strings.Split(r.c.String("msgId"), ",") {
			if id = strings.TrimSpace(id); id == "" {
				continue
			}
			d, err := r.a.MessageDetail(r.ctx, id, strings.TrimSpace(r.c.String("topic")))
			if err != nil {
				return err
			}
			details = append(details, d)
		}
		return r.emit(details, func(w io.Writer) {
			for _, d := range details {
				d.Print(w)
			}
		})
	})
}

func adminQueryMsgByKey() *cli.Command {
	return adminSub("queryMsgByKey", "Query Message by Key", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "msgKey", Aliases: []string{"k"}, Usage: "Message Key", Required: true},
	}, func(r *adminRun) error {
		msgs, err := r.a.QueryMessage(r.ctx, strings.TrimSpace(r.c.String("topic")), strings.TrimSpace(r.c.String("msgKey")),
			admin.QueryMaxNumByKey, 0, 1<<63-1, false)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"messages": msgs}, func(w io.Writer) { admin.PrintQueryByKey(w, msgs) })
	})
}

func adminSendMessage() *cli.Command {
	return adminSub("sendMessage", "Send a message", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "body", Aliases: []string{"p"}, Usage: "UTF-8 string format of the message body", Required: true},
		&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "Message keys"},
		&cli.StringFlag{Name: "tags", Aliases: []string{"c"}, Usage: "Message tags"},
		&cli.StringFlag{Name: "broker", Aliases: []string{"b"}, Usage: "Send message to target broker (name)"},
		&cli.StringFlag{Name: "qid", Aliases: []string{"i"}, Usage: "Send message to target queue"},
		&cli.StringFlag{Name: "msgTraceEnable", Aliases: []string{"m"}, Usage: "Message Trace Enable (not supported: must be false)"},
		&cli.StringFlag{Name: "delayLevel", Usage: "delay level (DELAY property, 1..18 by default)"},
		&cli.StringFlag{Name: "deliverTimeMs", Usage: "timer message: absolute delivery time in ms (TIMER_DELIVER_MS)"},
		&cli.StringFlag{Name: "delayTimeSec", Usage: "timer message: delay in seconds (TIMER_DELAY_SEC)"},
	}, func(r *adminRun) error {
		c := r.c
		if javaBool(c.String("msgTraceEnable")) {
			return fmt.Errorf("%w: message trace (-m true) is not supported", admin.ErrUsage)
		}
		spec := admin.SendMessageSpec{
			Topic: strings.TrimSpace(c.String("topic")), Body: []byte(strings.TrimSpace(c.String("body"))),
			Tags: strings.TrimSpace(c.String("tags")), Keys: strings.TrimSpace(c.String("key")),
			BrokerName: strings.TrimSpace(c.String("broker")), QueueID: -1, Properties: map[string]string{},
		}
		if c.IsSet("qid") {
			if spec.BrokerName == "" {
				return fmt.Errorf("%w: Broker name must be set if the queue is chosen!", admin.ErrUsage)
			}
			var err error
			if spec.QueueID, err = optInt32(c, "qid", -1); err != nil {
				return err
			}
		}
		for flag, prop := range map[string]string{"delayLevel": message.PropDelay, "deliverTimeMs": message.PropTimerDeliverMs, "delayTimeSec": message.PropTimerDelaySec} {
			if c.IsSet(flag) {
				v, err := optInt64(c, flag, 0)
				if err != nil {
					return err
				}
				spec.Properties[prop] = strconv.FormatInt(v, 10)
			}
		}
		res, err := r.a.SendMessage(r.ctx, spec)
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { admin.PrintSendResult(w, res) })
	})
}

func adminConsumeMessage() *cli.Command {
	return adminSub("consumeMessage", "Consume message", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "brokerName", Aliases: []string{"b"}, Usage: "Broker name"},
		&cli.StringFlag{Name: "queueId", Aliases: []string{"i"}, Usage: "Queue Id"},
		&cli.StringFlag{Name: "offset", Aliases: []string{"o"}, Usage: "Queue offset"},
		&cli.StringFlag{Name: "consumerGroup", Aliases: []string{"g"}, Usage: "Consumer group name"},
		&cli.StringFlag{Name: "beginTimestamp", Aliases: []string{"s"}, Usage: "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
		&cli.StringFlag{Name: "endTimestamp", Aliases: []string{"e"}, Usage: "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
		&cli.StringFlag{Name: "MessageNumber", Aliases: []string{"c"}, Usage: "Number of message to be consumed (default 128)"},
	}, func(r *adminRun) error {
		c := r.c
		spec := admin.ConsumeSpec{
			Topic: strings.TrimSpace(c.String("topic")), BrokerName: strings.TrimSpace(c.String("brokerName")),
			QueueID: -1, Offset: -1, Group: strings.TrimSpace(c.String("consumerGroup")),
		}
		var err error
		if spec.Count, err = optInt64(c, "MessageNumber", 128); err != nil {
			return err
		}
		if spec.Count <= 0 {
			return fmt.Errorf("%w: Please input a positive messageNumber!", admin.ErrUsage)
		}
		if c.IsSet("queueId") {
			if spec.BrokerName == "" {
				return fmt.Errorf("%w: Please set the brokerName before queueId!", admin.ErrUsage)
			}
			if spec.QueueID, err = optInt32(c, "queueId", -1); err != nil {
				return err
			}
		}
		if c.IsSet("offset") {
			if spec.QueueID < 0 {
				return fmt.Errorf("%w: Please set queueId before offset!", admin.ErrUsage)
			}
			if spec.Offset, err = optInt64(c, "offset", -1); err != nil {
				return err
			}
		}
		now := time.Now().UnixMilli()
		if spec.Begin, spec.End, err = timeBounds(c, "beginTimestamp", "endTimestamp", now); err != nil {
			return err
		}
		return r.a.ConsumeMessage(r.ctx, spec, &admin.MessageWriter{W: r.out, JSON: r.json, PrintBody: true})
	})
}

// timeBounds reads the begin/end timestamp flags, which may not lie in the
// future and must be ordered.
func timeBounds(c *cli.Context, beginFlag, endFlag string, now int64) (begin, end int64, err error) {
	if c.IsSet(beginFlag) {
		if begin, err = admin.ParseTimestamp(c.String(beginFlag)); err != nil {
			return 0, 0, err
		}
		if begin > now {
			return 0, 0, fmt.Errorf("%w: Please set the beginTimestamp before now!", admin.ErrUsage)
		}
	}
	if c.IsSet(endFlag) {
		if end, err = admin.ParseTimestamp(c.String(endFlag)); err != nil {
			return 0, 0, err
		}
		if end > now {
			return 0, 0, fmt.Errorf("%w: Please set the endTimestamp before now!", admin.ErrUsage)
		}
		if begin > end {
			return 0, 0, fmt.Errorf("%w: Please make sure that the beginTimestamp is less than or equal to the endTimestamp", admin.ErrUsage)
		}
	}
	return begin, end, nil
}

func adminPrintMsg() *cli.Command {
	return adminSub("printMsg", "Print Message Detail", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "charsetName", Aliases: []string{"c"}, Usage: "CharsetName (only UTF-8)"},
		&cli.StringFlag{Name: "subExpression", Aliases: []string{"s"}, Usage: "Subscribe Expression(eg: TagA || TagB)"},
		&cli.StringFlag{Name: "beginTimestamp", Aliases: []string{"b"}, Usage: "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
		&cli.StringFlag{Name: "endTimestamp", Aliases: []string{"e"}, Usage: "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
		&cli.StringFlag{Name: "printBody", Aliases: []string{"d"}, Usage: "print body (default true)"},
	}, func(r *adminRun) error {
		c := r.c
		if cs := strings.TrimSpace(c.String("charsetName")); cs != "" && !strings.EqualFold(cs, "UTF-8") && !strings.EqualFold(cs, "UTF8") {
			return fmt.Errorf("%w: charset %s is not supported (UTF-8 only)", admin.ErrUsage, cs)
		}
		spec := admin.PrintMsgSpec{Topic: strings.TrimSpace(c.String("topic")), SubExpr: strings.TrimSpace(c.String("subExpression"))}
		var err error
		if c.IsSet("beginTimestamp") {
			if spec.Begin, err = admin.ParseTimestamp(c.String("beginTimestamp")); err != nil {
				return err
			}
		}
		if c.IsSet("endTimestamp") {
			if spec.End, err = admin.ParseTimestamp(c.String("endTimestamp")); err != nil {
				return err
			}
		}
		printBody := !c.IsSet("printBody") || javaBool(c.String("printBody"))
		return r.a.PrintMsg(r.ctx, spec, &admin.MessageWriter{W: r.out, JSON: r.json, PrintBody: printBody})
	})
}

func adminGetBrokerConfig() *cli.Command {
	return adminSub("getBrokerConfig", "Get broker config by cluster or special broker!", []cli.Flag{
		brokerFlag("get which broker"),
		clusterFlag("get which cluster"),
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		cfgs, err := r.a.BrokerConfigs(r.ctx, addr, cluster)
		if cfgs == nil {
			return err
		}
		if perr := r.emit(cfgs, func(w io.Writer) { admin.PrintBrokerConfigs(w, cfgs, addr == "") }); perr != nil {
			return perr
		}
		return err
	})
}

func adminUpdateBrokerConfig() *cli.Command {
	return adminSub("updateBrokerConfig", "Update broker's config", []cli.Flag{
		brokerFlag("update which broker"),
		clusterFlag("update which cluster"),
		&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "config key", Required: true},
		&cli.StringFlag{Name: "value", Aliases: []string{"v"}, Usage: "config value", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		key, value := strings.TrimSpace(r.c.String("key")), strings.TrimSpace(r.c.String("value"))
		done, err := r.a.UpdateBrokerConfig(r.ctx, addr, cluster, key, value)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "key": key, "value": value}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "update broker config success, %s\n", b)
			}
		})
	})
}

func adminTimerStatus() *cli.Command {
	return adminSub("timerStatus", "Timer wheel status: pending messages, read-time lag, enqueue/dequeue rates", []cli.Flag{
		brokerFlag("broker address"),
		clusterFlag("every broker of this cluster (default: every broker)"),
	}, func(r *adminRun) error {
		addr, cluster := strings.TrimSpace(r.c.String("brokerAddr")), strings.TrimSpace(r.c.String("clusterName"))
		if addr != "" && cluster != "" {
			return fmt.Errorf("%w: -b and -c exclude each other", admin.ErrUsage)
		}
		sts, err := r.a.TimerStatuses(r.ctx, addr, cluster)
		if sts == nil {
			return err
		}
		if perr := r.emit(sts, func(w io.Writer) { admin.PrintTimerStatuses(w, sts) }); perr != nil {
			return perr
		}
		return err
	})
}

func adminRecallMessage() *cli.Command {
	return adminSub("recallMessage", "Recall (cancel) a timer message by the recall handle its send returned", []cli.Flag{
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic name (default: the handle's)"},
		&cli.StringFlag{Name: "recallHandle", Aliases: []string{"i"}, Usage: "recall handle", Required: true},
		&cli.StringFlag{Name: "producerGroup", Aliases: []string{"g"}, Usage: "producer group"},
	}, func(r *adminRun) error {
		res, err := r.a.RecallMessage(r.ctx, strings.TrimSpace(r.c.String("topic")), strings.TrimSpace(r.c.String("recallHandle")), strings.TrimSpace(r.c.String("producerGroup")))
		if err != nil {
			return err
		}
		return r.emit(res, res.Print)
	})
}
