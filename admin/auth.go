package admin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/remoting"
)

// ACL 2.0 (5.3.3 codes 3001-3010, DefaultMQAdminExt's user and ACL
// methods). Each call goes to the broker at addr or to every master of
// cluster (mqadmin's -c also reaches slaves, which rmq does not run).

// eachBroker runs f on every target, returning the brokers done.
func (a *Admin) eachBroker(ctx context.Context, addr, cluster string, f func(t string) error) ([]string, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range targets {
		if err := f(t); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}

func (a *Admin) authCall(ctx context.Context, addr string, code int32, ext map[string]string, body any) (*remoting.Command, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	return a.callBroker(ctx, addr, newRequest(code, ext, raw))
}

// CreateUser sends AUTH_CREATE_USER (createUser -u -p -t).
func (a *Admin) CreateUser(ctx context.Context, addr, cluster string, u auth.UserInfo) ([]string, error) {
	return a.eachBroker(ctx, addr, cluster, func(t string) error {
		_, err := a.authCall(ctx, t, remoting.AuthCreateUser, map[string]string{"username": u.Username}, u)
		return err
	})
}

// UpdateUser sends AUTH_UPDATE_USER.
func (a *Admin) UpdateUser(ctx context.Context, addr, cluster string, u auth.UserInfo) ([]string, error) {
	return a.eachBroker(ctx, addr, cluster, func(t string) error {
		_, err := a.authCall(ctx, t, remoting.AuthUpdateUser, map[string]string{"username": u.Username}, u)
		return err
	})
}

// DeleteUser sends AUTH_DELETE_USER.
func (a *Admin) DeleteUser(ctx context.Context, addr, cluster, username string) ([]string, error) {
	return a.eachBroker(ctx, addr, cluster, func(t string) error {
		_, err := a.authCall(ctx, t, remoting.AuthDeleteUser, map[string]string{"username": username}, nil)
		return err
	})
}

// GetUser sends AUTH_GET_USER to addr; nil when the broker has no such user.
func (a *Admin) GetUser(ctx context.Context, addr, username string) (*auth.UserInfo, error) {
	resp, err := a.authCall(ctx, addr, remoting.AuthGetUser, map[string]string{"username": username}, nil)
	if err != nil || len(resp.Body) == 0 {
		return nil, err
	}
	var u auth.UserInfo
	if err := decodeBody(roleBroker, addr, remoting.AuthGetUser, resp.Body, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// ListUsers sends AUTH_LIST_USER with filter.
func (a *Admin) ListUsers(ctx context.Context, addr, filter string) ([]auth.UserInfo, error) {
	resp, err := a.authCall(ctx, addr, remoting.AuthListUser, map[string]string{"filter": filter}, nil)
	if err != nil || len(resp.Body) == 0 {
		return nil, err
	}
	var us []auth.UserInfo
	err = decodeBody(roleBroker, addr, remoting.AuthListUser, resp.Body, &us)
	return us, err
}

// AclOf is AclInfo.of as mqadmin's createAcl/updateAcl build it: one policy
// without a type, one entry per resource.
func AclOf(subject string, resources, actions []string, sourceIPs []string, decision string) auth.AclInfo {
	p := auth.PolicyInfo{}
	for _, r := range resources {
		p.Entries = append(p.Entries, auth.EntryInfo{Resource: r, Actions: actions, SourceIps: sourceIPs, Decision: decision})
	}
	return auth.AclInfo{Subject: subject, Policies: []auth.PolicyInfo{p}}
}

// PutAcl sends AUTH_CREATE_ACL (update false) or AUTH_UPDATE_ACL.
func (a *Admin) PutAcl(ctx context.Context, addr, cluster string, acl auth.AclInfo, update bool) ([]string, error) {
	code := remoting.AuthCreateACL
	if update {
		code = remoting.AuthUpdateACL
	}
	return a.eachBroker(ctx, addr, cluster, func(t string) error {
		_, err := a.authCall(ctx, t, code, map[string]string{"subject": acl.Subject}, acl)
		return err
	})
}

// DeleteAcl sends AUTH_DELETE_ACL (no policyType, as mqadmin).
func (a *Admin) DeleteAcl(ctx context.Context, addr, cluster, subject, resource string) ([]string, error) {
	ext := map[string]string{"subject": subject}
	if resource != "" {
		ext["resource"] = resource
	}
	return a.eachBroker(ctx, addr, cluster, func(t string) error {
		_, err := a.authCall(ctx, t, remoting.AuthDeleteACL, ext, nil)
		return err
	})
}

// GetAcl sends AUTH_GET_ACL; nil when the subject has none.
func (a *Admin) GetAcl(ctx context.Context, addr, subject string) (*auth.AclInfo, error) {
	resp, err := a.authCall(ctx, addr, remoting.AuthGetACL, map[string]string{"subject": subject}, nil)
	if err != nil || len(resp.Body) == 0 {
		return nil, err
	}
	var ai auth.AclInfo
	if err := decodeBody(roleBroker, addr, remoting.AuthGetACL, resp.Body, &ai); err != nil {
		return nil, err
	}
	return &ai, nil
}

// ListAcls sends AUTH_LIST_ACL.
func (a *Admin) ListAcls(ctx context.Context, addr, subjectFilter, resourceFilter string) ([]auth.AclInfo, error) {
	resp, err := a.authCall(ctx, addr, remoting.AuthListACL, map[string]string{"subjectFilter": subjectFilter, "resourceFilter": resourceFilter}, nil)
	if err != nil || len(resp.Body) == 0 {
		return nil, err
	}
	var as []auth.AclInfo
	err = decodeBody(roleBroker, addr, remoting.AuthListACL, resp.Body, &as)
	return as, err
}

// CopyUsers is copyUser: the users of from (one, or all when username is
// blank) created on to, or updated where they exist.
func (a *Admin) CopyUsers(ctx context.Context, from, to, username string) ([]string, error) {
	var users []auth.UserInfo
	if strings.TrimSpace(username) != "" {
		u, err := a.GetUser(ctx, from, username)
		if err != nil {
			return nil, err
		}
		if u != nil {
			users = append(users, *u)
		}
	} else {
		var err error
		if users, err = a.ListUsers(ctx, from, ""); err != nil {
			return nil, err
		}
	}
	var done []string
	for _, u := range users {
		old, err := a.GetUser(ctx, to, u.Username)
		if err != nil {
			return done, err
		}
		if old == nil {
			_, err = a.CreateUser(ctx, to, "", u)
		} else {
			_, err = a.UpdateUser(ctx, to, "", u)
		}
		if err != nil {
			return done, err
		}
		done = append(done, u.Username)
	}
	return done, nil
}

// CopyAcls is copyAcl: the ACLs of from (one subject, or all) created on
// to, or updated where they exist.
func (a *Admin) CopyAcls(ctx context.Context, from, to, subject string) ([]string, error) {
	var acls []auth.AclInfo
	if strings.TrimSpace(subject) != "" {
		ai, err := a.GetAcl(ctx, from, subject)
		if err != nil {
			return nil, err
		}
		if ai != nil {
			acls = append(acls, *ai)
		}
	} else {
		var err error
		if acls, err = a.ListAcls(ctx, from, "", ""); err != nil {
			return nil, err
		}
	}
	var done []string
	for _, ai := range acls {
		old, err := a.GetAcl(ctx, to, ai.Subject)
		if err != nil {
			return done, err
		}
		if _, err := a.PutAcl(ctx, to, "", ai, old != nil); err != nil {
			return done, err
		}
		done = append(done, ai.Subject)
	}
	return done, nil
}
