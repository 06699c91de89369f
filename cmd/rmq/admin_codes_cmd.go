package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// The offset, trace and name-server config subcommands of mqadmin.

func adminCodesCommands() []*cli.Command {
	return []*cli.Command{
		adminResetOffsetByTime(), adminCloneGroupOffset(), adminGetConsumerStatus(), adminConsumerStatus(), adminQueryCq(),
		adminQueryMsgTraceByID(), adminQueryMsgByUniqueKey(), adminGetNamesrvConfig(), adminUpdateNamesrvConfig(),
	}
}

func groupFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: usage, Required: true}
}

func adminResetOffsetByTime() *cli.Command {
	return adminSub("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", []cli.Flag{
		groupFlag("set the consumer group"),
		topicFlag(),
		&cli.StringFlag{Name: "timestamp", Aliases: []string{"s"}, Usage: "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", Required: true},
		&cli.StringFlag{Name: "force", Aliases: []string{"f"}, Usage: "set the force rollback by timestamp switch[true|false] (default true)"},
		&cli.StringFlag{Name: "cplus", Aliases: []string{"c"}, Usage: "reset c++ client offset (accepted; the broker picks the body form by the client's language)"},
	}, func(r *adminRun) error {
		tsText := strings.TrimSpace(r.c.String("timestamp"))
		ts, err := admin.ParseResetTimestamp(tsText, time.Now())
		if err != nil {
			return err
		}
		force := true
		if r.c.IsSet("force") {
			force = javaBool(r.c.String("force"))
		}
		res, err := r.a.ResetOffsetByTime(r.ctx, strings.TrimSpace(r.c.String("group")), strings.TrimSpace(r.c.String("topic")), ts, force)
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { admin.PrintResetResult(w, res, tsText) })
	})
}

func adminCloneGroupOffset() *cli.Command {
	return adminSub("cloneGroupOffset", "clone offset from other group.", []cli.Flag{
		&cli.StringFlag{Name: "srcGroup", Aliases: []string{"s"}, Usage: "set source consumer group", Required: true},
		&cli.StringFlag{Name: "destGroup", Aliases: []string{"d"}, Usage: "set destination consumer group", Required: true},
		topicFlag(),
		&cli.StringFlag{Name: "offline", Aliases: []string{"o"}, Usage: "the group or the topic is offline (true|false)"},
	}, func(r *adminRun) error {
		src, dest, topic := strings.TrimSpace(r.c.String("srcGroup")), strings.TrimSpace(r.c.String("destGroup")), strings.TrimSpace(r.c.String("topic"))
		offline := javaBool(r.c.String("offline"))
		if err := r.a.CloneGroupOffset(r.ctx, src, dest, topic, offline); err != nil {
			return err
		}
		res := map[string]any{"srcGroup": src, "destGroup": dest, "topic": topic, "offline": offline}
		return r.emit(res, func(w io.Writer) {
			fmt.Fprintf(w, "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]", src, dest, topic)
		})
	})
}

func adminGetConsumerStatus() *cli.Command {
	return adminSub("getConsumerStatus", "get consumer status from client.", []cli.Flag{
		groupFlag("consumer group name"),
		topicFlag(),
		&cli.StringFlag{Name: "originClientId", Aliases: []string{"i"}, Usage: "the client id"},
	}, func(r *adminRun) error {
		group, topic, id := strings.TrimSpace(r.c.String("group")), strings.TrimSpace(r.c.String("topic")), strings.TrimSpace(r.c.String("originClientId"))
		st, err := r.a.ConsumerStatus(r.ctx, group, topic, id)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"group": group, "clients": st}, func(w io.Writer) { admin.PrintConsumerStatus(w, group, topic, id, st) })
	})
}

func adminConsumerStatus() *cli.Command {
	return adminSub("consumerStatus", "Query consumer's internal data structure", []cli.Flag{
		groupFlag("consumer group name"),
		&cli.StringFlag{Name: "clientId", Aliases: []string{"i"}, Usage: "The consumer's client id"},
	}, func(r *adminRun) error {
		id := strings.TrimSpace(r.c.String("clientId"))
		infos, err := r.a.ConsumerRunningInfo(r.ctx, strings.TrimSpace(r.c.String("group")), id)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"clients": infos}, func(w io.Writer) { admin.PrintRunningInfos(w, infos, id != "") })
	})
}

func adminQueryCq() *cli.Command {
	return adminSub("queryCq", "Query cq command.", []cli.Flag{
		topicFlag(),
		&cli.StringFlag{Name: "queue", Aliases: []string{"q"}, Usage: "queue num, ie. 1", Required: true},
		&cli.StringFlag{Name: "index", Aliases: []string{"i"}, Usage: "start queue index.", Required: true},
		&cli.StringFlag{Name: "count", Aliases: []string{"c"}, Usage: "how many (default 10)"},
		brokerFlag("broker addr."),
		&cli.StringFlag{Name: "consumer", Aliases: []string{"g"}, Usage: "consumer group."},
	}, func(r *adminRun) error {
		qid, err := optInt32(r.c, "queue", 0)
		if err != nil {
			return err
		}
		index, err := optInt64(r.c, "index", 0)
		if err != nil {
			return err
		}
		count, err := optInt32(r.c, "count", 10)
		if err != nil {
			return err
		}
		res, err := r.a.QueryConsumeQueue(r.ctx, strings.TrimSpace(r.c.String("brokerAddr")), strings.TrimSpace(r.c.String("topic")),
			qid, index, count, strings.TrimSpace(r.c.String("consumer")))
		if err != nil {
			return err
		}
		return r.emit(res, func(w io.Writer) { admin.PrintConsumeQueue(w, res, index) })
	})
}

func adminQueryMsgTraceByID() *cli.Command {
	return adminSub("queryMsgTraceById", "query a message trace", []cli.Flag{
		&cli.StringFlag{Name: "msgId", Aliases: []string{"i"}, Usage: "Message Id", Required: true},
		&cli.StringFlag{Name: "traceTopic", Aliases: []string{"t"}, Usage: "The name value of message trace topic (default RMQ_SYS_TRACE_TOPIC)"},
	}, func(r *adminRun) error {
		views, err := r.a.QueryMsgTraceByID(r.ctx, strings.TrimSpace(r.c.String("traceTopic")), strings.TrimSpace(r.c.String("msgId")))
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"traces": views}, func(w io.Writer) { admin.PrintTraces(w, views) })
	})
}

func adminQueryMsgByUniqueKey() *cli.Command {
	return adminSub("queryMsgByUniqueKey", "Query Message by Unique key", []cli.Flag{
		&cli.StringFlag{Name: "msgId", Aliases: []string{"i"}, Usage: "Message Id (the client id, UNIQ_KEY)", Required: true},
		topicFlag(),
	}, func(r *adminRun) error {
		d, err := r.a.MessageDetailByUniqueKey(r.ctx, strings.TrimSpace(r.c.String("msgId")), strings.TrimSpace(r.c.String("topic")))
		if err != nil {
			return err
		}
		return r.emit(d, func(w io.Writer) { d.Print(w) })
	})
}

func adminGetNamesrvConfig() *cli.Command {
	return adminSub("getNamesrvConfig", "Get configs of name server.", nil, func(r *adminRun) error {
		cfgs, err := r.a.GetNamesrvConfig(r.ctx)
		if err != nil {
			return err
		}
		return r.emit(cfgs, func(w io.Writer) { admin.PrintNamesrvConfigs(w, cfgs) })
	})
}

func adminUpdateNamesrvConfig() *cli.Command {
	return adminSub("updateNamesrvConfig", "Update configs of name server.", []cli.Flag{
		&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "config key", Required: true},
		&cli.StringFlag{Name: "value", Aliases: []string{"v"}, Usage: "config value", Required: true},
	}, func(r *adminRun) error {
		key, value := strings.TrimSpace(r.c.String("key")), strings.TrimSpace(r.c.String("value"))
		if err := r.a.UpdateNamesrvConfig(r.ctx, key, value); err != nil {
			return err
		}
		servers := r.a.NamesrvAddrs()
		return r.emit(map[string]any{"namesrv": servers, "key": key, "value": value}, func(w io.Writer) {
			fmt.Fprintf(w, "update name server config success!%v\n%s : %s\n", servers, key, value)
		})
	})
}
