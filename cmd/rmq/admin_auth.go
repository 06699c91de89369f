package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/auth"
)

// The ACL 2.0 subcommands of mqadmin 5.3.3 (tools/command/auth), sending
// codes 3001-3010. Sign them with --access-key/--secret-key (a super user
// where the broker authenticates).

func adminAuthCommands() []*cli.Command {
	return []*cli.Command{
		adminUserCmd("createUser", "Create user to cluster.", false),
		adminUserCmd("updateUser", "Update user to cluster.", true),
		adminDeleteUser(), adminGetUser(), adminListUser(),
		adminAclCmd("createAcl", "Create acl to cluster.", false),
		adminAclCmd("updateAcl", "Update acl to cluster.", true),
		adminDeleteAcl(), adminGetAcl(), adminListAcl(), adminCopyUser(), adminCopyAcl(),
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// targets is -b, or every master of -c.
func (r *adminRun) targets() ([]string, error) {
	addr, cluster, err := brokerOrCluster(r.c)
	if err != nil {
		return nil, err
	}
	if addr != "" {
		return []string{addr}, nil
	}
	return r.a.MasterAddrs(r.ctx, cluster)
}

func doneText(done []string, what string) func(io.Writer) {
	return func(w io.Writer) {
		for _, b := range done {
			fmt.Fprintf(w, "%s to %s success.\n", what, b)
		}
	}
}

func adminUserCmd(name, usage string, update bool) *cli.Command {
	verb := strings.TrimSuffix(name, "User")
	return adminSub(name, usage, []cli.Flag{
		clusterFlag(verb + " user to which cluster"), brokerFlag(verb + " user to which broker"),
		&cli.StringFlag{Name: "username", Aliases: []string{"u"}, Usage: "the username of user to " + verb, Required: true},
		&cli.StringFlag{Name: "password", Aliases: []string{"p"}, Usage: "the password of user to " + verb},
		&cli.StringFlag{Name: "userType", Aliases: []string{"t"}, Usage: "the userType of user to " + verb + " (Super, Normal)"},
		&cli.StringFlag{Name: "userStatus", Aliases: []string{"s"}, Usage: "the userStatus of user to " + verb + " (enable, disable)"},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		u := auth.UserInfo{Username: strings.TrimSpace(r.c.String("username")), Password: strings.TrimSpace(r.c.String("password")),
			UserType: strings.TrimSpace(r.c.String("userType")), UserStatus: strings.TrimSpace(r.c.String("userStatus"))}
		var done []string
		if update {
			done, err = r.a.UpdateUser(r.ctx, addr, cluster, u)
		} else {
			done, err = r.a.CreateUser(r.ctx, addr, cluster, u)
		}
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "username": u.Username}, doneText(done, verb+" user"))
	})
}

func adminDeleteUser() *cli.Command {
	return adminSub("deleteUser", "Delete user from cluster.", []cli.Flag{
		clusterFlag("delete user from which cluster"), brokerFlag("delete user from which broker"),
		&cli.StringFlag{Name: "username", Aliases: []string{"u"}, Usage: "the username of user to delete", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		done, err := r.a.DeleteUser(r.ctx, addr, cluster, strings.TrimSpace(r.c.String("username")))
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done}, doneText(done, "delete user"))
	})
}

func printUsers(w io.Writer, addr string, us []auth.UserInfo) {
	for _, u := range us {
		fmt.Fprintf(w, "%-20s %-24s %-24s %-10s %-10s\n", addr, u.Username, u.Password, u.UserType, u.UserStatus)
	}
}

func adminGetUser() *cli.Command {
	return adminSub("getUser", "Get user from cluster.", []cli.Flag{
		brokerFlag("get user for which broker"), clusterFlag("get user for specified cluster"),
		&cli.StringFlag{Name: "username", Aliases: []string{"u"}, Usage: "the username of user to get", Required: true},
	}, func(r *adminRun) error {
		ts, err := r.targets()
		if err != nil {
			return err
		}
		out := map[string]*auth.UserInfo{}
		for _, t := range ts {
			if out[t], err = r.a.GetUser(r.ctx, t, strings.TrimSpace(r.c.String("username"))); err != nil {
				return err
			}
		}
		return r.emit(out, func(w io.Writer) {
			for _, t := range ts {
				if u := out[t]; u != nil {
					printUsers(w, t, []auth.UserInfo{*u})
				}
			}
		})
	})
}

func adminListUser() *cli.Command {
	return adminSub("listUser", "List user from cluster.", []cli.Flag{
		brokerFlag("list user for which broker"), clusterFlag("list user for specified cluster"),
		&cli.StringFlag{Name: "filter", Aliases: []string{"f"}, Usage: "the filter to list users"},
	}, func(r *adminRun) error {
		ts, err := r.targets()
		if err != nil {
			return err
		}
		out := map[string][]auth.UserInfo{}
		for _, t := range ts {
			if out[t], err = r.a.ListUsers(r.ctx, t, strings.TrimSpace(r.c.String("filter"))); err != nil {
				return err
			}
		}
		return r.emit(out, func(w io.Writer) {
			for _, t := range ts {
				printUsers(w, t, out[t])
			}
		})
	})
}

func adminAclCmd(name, usage string, update bool) *cli.Command {
	verb := strings.TrimSuffix(name, "Acl")
	return adminSub(name, usage, []cli.Flag{
		clusterFlag(verb + " acl to which cluster"), brokerFlag(verb + " acl to which broker"),
		&cli.StringFlag{Name: "subject", Aliases: []string{"s"}, Usage: "the subject of acl to " + verb + " (User:name)", Required: true},
		&cli.StringFlag{Name: "resources", Aliases: []string{"r"}, Usage: "the resources of acl to " + verb + " (Topic:t, Group:g*, *)", Required: true},
		&cli.StringFlag{Name: "actions", Aliases: []string{"a"}, Usage: "the actions of acl to " + verb + " (Pub,Sub,Create,Update,Delete,Get,List,All)", Required: true},
		&cli.StringFlag{Name: "sourceIp", Aliases: []string{"i"}, Usage: "the sourceIps of acl to " + verb},
		&cli.StringFlag{Name: "decision", Aliases: []string{"d"}, Usage: "the decision of acl to " + verb + " (Allow, Deny)", Required: true},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		ai := admin.AclOf(strings.TrimSpace(r.c.String("subject")), splitList(r.c.String("resources")), splitList(r.c.String("actions")),
			splitList(r.c.String("sourceIp")), strings.TrimSpace(r.c.String("decision")))
		done, err := r.a.PutAcl(r.ctx, addr, cluster, ai, update)
		if err != nil {
			return err
		}
		return r.emit(map[string]any{"brokers": done, "acl": ai}, doneText(done, verb+" acl"))
	})
}

func adminDeleteAcl() *cli.Command {
	return adminSub("deleteAcl", "Delete acl from cluster.", []cli.Flag{
		clusterFlag("delete acl from which cluster"), brokerFlag("delete acl from which broker"),
		&cli.StringFlag{Name: "subject", Aliases: []string{"s"}, Usage: "the subject of acl to delete.", Required: true},
		&cli.StringFlag{Name: "resources", Aliases: []string{"r"}, Usage: "the resources of acl to delete"},
	}, func(r *adminRun) error {
		addr, cluster, err := brokerOrCluster(r.c)
		if err != nil {
			return err
		}
		subject := strings.TrimSpace(r.c.String("subject"))
		res := splitList(r.c.String("resources"))
		if len(res) == 0 {
			res = []string{""}
		}
		var done []string
		for _, rs := range res {
			if done, err = r.a.DeleteAcl(r.ctx, addr, cluster, subject, rs); err != nil {
				return err
			}
		}
		return r.emit(map[string]any{"brokers": done}, doneText(done, "delete acl"))
	})
}

func printAcls(w io.Writer, addr string, as []auth.AclInfo) {
	for _, a := range as {
		for _, p := range a.Policies {
			for _, e := range p.Entries {
				fmt.Fprintf(w, "%-20s %-16s %-8s %-24s %-20s %-20s %s\n", addr, a.Subject, p.PolicyType, e.Resource,
					strings.Join(e.Actions, ","), strings.Join(e.SourceIps, ","), e.Decision)
			}
		}
	}
}

func adminGetAcl() *cli.Command {
	return adminSub("getAcl", "Get acl from cluster.", []cli.Flag{
		brokerFlag("get acl for which broker"), clusterFlag("get acl for specified cluster"),
		&cli.StringFlag{Name: "subject", Aliases: []string{"s"}, Usage: "the subject of acl to get", Required: true},
	}, func(r *adminRun) error {
		ts, err := r.targets()
		if err != nil {
			return err
		}
		out := map[string]*auth.AclInfo{}
		for _, t := range ts {
			if out[t], err = r.a.GetAcl(r.ctx, t, strings.TrimSpace(r.c.String("subject"))); err != nil {
				return err
			}
		}
		return r.emit(out, func(w io.Writer) {
			for _, t := range ts {
				if a := out[t]; a != nil {
					printAcls(w, t, []auth.AclInfo{*a})
				}
			}
		})
	})
}

func adminListAcl() *cli.Command {
	return adminSub("listAcl", "List acl from cluster.", []cli.Flag{
		brokerFlag("list acl for which broker."), clusterFlag("list acl for specified cluster."),
		&cli.StringFlag{Name: "subject", Aliases: []string{"s"}, Usage: "the subject of acl to filter."},
		&cli.StringFlag{Name: "resource", Aliases: []string{"r"}, Usage: "the resource of acl to filter."},
	}, func(r *adminRun) error {
		ts, err := r.targets()
		if err != nil {
			return err
		}
		out := map[string][]auth.AclInfo{}
		for _, t := range ts {
			if out[t], err = r.a.ListAcls(r.ctx, t, strings.TrimSpace(r.c.String("subject")), strings.TrimSpace(r.c.String("resource"))); err != nil {
				return err
			}
		}
		return r.emit(out, func(w io.Writer) {
			for _, t := range ts {
				printAcls(w, t, out[t])
			}
		})
	})
}

func adminCopyUser() *cli.Command {
	return adminSub("copyUser", "Copy user to cluster.", []cli.Flag{
		&cli.StringFlag{Name: "fromBroker", Aliases: []string{"f"}, Usage: "the source broker that the users copy from", Required: true},
		&cli.StringFlag{Name: "toBroker", Aliases: []string{"t"}, Usage: "the target broker that the users copy to", Required: true},
		&cli.StringFlag{Name: "usernames", Aliases: []string{"u"}, Usage: "the username list of user to copy."},
	}, func(r *adminRun) error {
		from, to := strings.TrimSpace(r.c.String("fromBroker")), strings.TrimSpace(r.c.String("toBroker"))
		names := splitList(r.c.String("usernames"))
		if len(names) == 0 {
			names = []string{""}
		}
		var copied []string
		for _, n := range names {
			done, err := r.a.CopyUsers(r.ctx, from, to, n)
			copied = append(copied, done...)
			if err != nil {
				return err
			}
		}
		return r.emit(map[string]any{"users": copied}, func(w io.Writer) {
			for _, u := range copied {
				fmt.Fprintf(w, "copy user of %s from %s to %s success.\n", u, from, to)
			}
		})
	})
}

func adminCopyAcl() *cli.Command {
	return adminSub("copyAcl", "Copy acl to cluster.", []cli.Flag{
		&cli.StringFlag{Name: "fromBroker", Aliases: []string{"f"}, Usage: "the source broker that the acls copy from", Required: true},
		&cli.StringFlag{Name: "toBroker", Aliases: []string{"t"}, Usage: "the target broker that the acls copy to", Required: true},
		&cli.StringFlag{Name: "subjects", Aliases: []string{"s"}, Usage: "the subject list of acl to copy."},
	}, func(r *adminRun) error {
		from, to := strings.TrimSpace(r.c.String("fromBroker")), strings.TrimSpace(r.c.String("toBroker"))
		subjects := splitList(r.c.String("subjects"))
		if len(subjects) == 0 {
			subjects = []string{""}
		}
		var copied []string
		for _, s := range subjects {
			done, err := r.a.CopyAcls(r.ctx, from, to, s)
			copied = append(copied, done...)
			if err != nil {
				return err
			}
		}
		return r.emit(map[string]any{"acls": copied}, func(w io.Writer) {
			for _, s := range copied {
				fmt.Fprintf(w, "copy acl of %s from %s to %s success.\n", s, from, to)
			}
		})
	})
}
