package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
)

// The ACL subcommands of mqadmin 4.9.8 (tools/command/acl).

func adminUpdateAclConfig() *cli.Command {
	return adminSub("updateAclConfig", "Update acl config yaml file in broker", []cli.Flag{
		brokerFlag("update acl config file to which broker"),
		clusterFlag("update acl config file to which cluster"),
		&cli.StringFlag{Name: "accessKey", Aliases: []string{"a"}, Usage: "set accessKey in acl config file", Required: true},
		&cli.StringFlag{Name: "secretKey", Aliases: []string{"s"}, Usage: "set secretKey in acl config file", Required: true},
		&cli.StringFlag{Name: "whiteRemoteAddress", Aliases: []string{"w"}, Usage: "set white ip Address for account in acl config file"},
		&cli.StringFlag{Name: "defaultTopicPerm", Aliases: []string{"i"}, Usage: "set default topicPerm in acl config file"},
		&cli.StringFlag{Name: "defaultGroupPerm", Aliases: []string{"u"}, Usage: "set default GroupPerm in acl config file"},
		&cli.StringFlag{Name: "topicPerms", Aliases: []string{"t"}, Usage: "set topicPerms list,eg: topicA=DENY,topicD=SUB"},
		&cli.StringFlag{Name: "groupPerms", Aliases: []string{"g"}, Usage: "set groupPerms list,eg: groupD=DENY,groupD=SUB"},
		&cli.StringFlag{Name: "admin", Aliases: []string{"m"}, Usage: "set admin flag in acl config file"},
	}, func(r *adminRun) error {
		c := r.c
		addr, cluster, err := brokerOrCluster(c)
		if err != nil {
			return err
		}
		cfg := admin.AclConfig{
			AccessKey:             strings.TrimSpace(c.String("accessKey")),
			SecretKey:             strings.TrimSpace(c.String("secretKey")),
			Admin:                 javaBool(c.String("admin")),
			WhiteRemoteAddress:    strings.TrimSpace(c.String("whiteRemoteAddress")),
			SetWhiteRemoteAddress: c.IsSet("whiteRemoteAddress"),
			DefaultTopicPerm:      strings.TrimSpace(c.String("defaultTopicPerm")),
			DefaultGroupPerm:      strings.TrimSpace(c.String("defaultGroupPerm")),
			TopicPerms:            strings.TrimSpace(c.String("topicPerms")),
			GroupPerms:            strings.TrimSpace(c.String("groupPerms")),
		}
		done, err := r.a.UpdateAclConfig(r.ctx, addr, cluster, cfg)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "config": cfg}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "create or update plain access config to %s success.\n", b)
			}
		})
	})
}

func adminDeleteAclConfig() *cli.Command {
	return adminSub("deleteAclConfig", "Delete Acl Config Account in broker", []cli.Flag{
		brokerFlag("delete acl config account from which broker"),
		clusterFlag("delete acl config account from which cluster"),
		&cli.StringFlag{Name: "accessKey", Aliases: []string{"a"}, Usage: "set accessKey in acl config file for deleting which account", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		ak := strings.TrimSpace(r.c.String("accessKey"))
		done, err := r.a.DeleteAclConfig(r.ctx, addr, cluster, ak)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "accessKey": ak}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "delete plain access config account from %s success.\n", b)
			}
			fmt.Fprintf(w, "account's accesskey is:%s\n", ak)
		})
	})
}

func adminClusterAclConfigVersion() *cli.Command {
	return adminSub("clusterAclConfigVersion", "List all of acl config version information in cluster", []cli.Flag{
		brokerFlag("query acl config version for which broker"),
		clusterFlag("query acl config version for specified cluster"),
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		rows, err := r.a.ClusterAclConfigVersion(r.ctx, addr, cluster)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": rows}, func(w io.Writer) { admin.PrintAclVersions(w, rows, cluster != "") })
	})
}

func adminUpdateGlobalWhiteAddr() *cli.Command {
	return adminSub("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker", []cli.Flag{
		brokerFlag("update global white address to which broker"),
		clusterFlag("update global white address to which cluster"),
		&cli.StringFlag{Name: "globalWhiteRemoteAddresses", Aliases: []string{"g"}, Usage: "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*", Required: true},
		&cli.StringFlag{Name: "aclFileFullPath", Aliases: []string{"p"}, Usage: "update global white address of specified acl file (default: the broker's)"},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		addrs := strings.TrimSpace(r.c.String("globalWhiteRemoteAddresses"))
		done, err := r.a.UpdateGlobalWhiteAddr(r.ctx, addr, cluster, addrs, strings.TrimSpace(r.c.String("aclFileFullPath")))
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "globalWhiteRemoteAddresses": addrs}, func(w io.Writer) {
			for _, b := range done {
				fmt.Fprintf(w, "update global white remote addresses to %s success.\n", b)
			}
		})
	})
}
