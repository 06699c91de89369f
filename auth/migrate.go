package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rmqio/rmq/acl"
)

// Migrate is AuthMigrator: every account of the plain_acl.yml files
// whose user does not exist yet becomes a user (password = secretKey,
// Super when admin) with an ACL of its topicPerms and groupPerms (Custom,
// literal) and its default perms (Default, Topic:* and Group:*). White
// addresses are not migrated; an existing user is left alone, ACL included.
// A missing file is skipped.
func Migrate(md *Metadata, files []string) error {
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		f, err := acl.ParseFile(raw)
		if err != nil {
			return fmt.Errorf("auth: migrate %s: %w", path, err)
		}
		for _, a := range f.Accounts {
			if err := migrateAccount(md, a); err != nil {
				return fmt.Errorf("auth: migrate %s account %s: %w", path, a.AccessKey, err)
			}
		}
	}
	return nil
}

func migrateAccount(md *Metadata, a acl.Account) error {
	if _, ok := md.User(a.AccessKey); ok {
		return nil
	}
	typ := UserNormal
	if a.Admin {
		typ = UserSuper
	}
	if err := md.CreateUser(User{Username: a.AccessKey, Password: a.SecretKey, UserType: typ}); err != nil {
		return err
	}
	var custom, def []entryInput
	perms := func(list []string, res func(string) Resource) {
		for _, tp := range list {
			parts := strings.FieldsFunc(tp, func(r rune) bool { return r == '=' })
			if len(parts) != 2 {
				continue
			}
			custom = append(custom, v1Entry(res(strings.TrimSpace(parts[0])), strings.TrimSpace(parts[1])))
		}
	}
	perms(a.TopicPerms, Topic)
	perms(a.GroupPerms, Group)
	if p := strings.TrimSpace(a.DefaultTopicPerm); p != "" {
		def = append(def, v1Entry(Resource{Type: TypeTopic, Pattern: PatternAny}, p))
	}
	if p := strings.TrimSpace(a.DefaultGroupPerm); p != "" {
		def = append(def, v1Entry(Resource{Type: TypeGroup, Pattern: PatternAny}, p))
	}
	var ps []policyInput
	if len(custom) > 0 {
		ps = append(ps, policyInput{typ: PolicyCustom, entries: custom})
	}
	if len(def) > 0 {
		ps = append(ps, policyInput{typ: PolicyDefault, entries: def})
	}
	if len(ps) == 0 {
		return nil
	}
	return md.PutAcl(subjectPrefix+a.AccessKey, ps)
}

// v1Entry is parseActions and parseDecision of a v1 permission: PUB,
// SUB, PUB|SUB, DENY (All, denied), anything else All allowed.
func v1Entry(r Resource, perm string) entryInput {
	e := Entry{Resource: r, Decision: Allow}
	switch perm {
	case "PUB":
		e.Actions = []string{ActPub}
	case "SUB":
		e.Actions = []string{ActSub}
	case "PUB|SUB", "SUB|PUB":
		e.Actions = []string{ActPub, ActSub}
	case "DENY":
		e.Actions = []string{ActAll}
		e.Decision = Deny
	default:
		e.Actions = []string{ActAll}
	}
	return entryInput{Entry: e, resourceOK: true}
}
