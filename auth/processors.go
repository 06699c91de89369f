package auth

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// Handler answers one request.
type Handler func(req *remoting.Command) *remoting.Command

// Processors are the handlers of codes 3001-3010 (AdminBrokerProcessor's
// auth methods), which the broker registers when the service runs.
func (s *Service) Processors() map[int32]Handler {
	return map[int32]Handler{
		remoting.AuthCreateUser: s.createUser,
		remoting.AuthUpdateUser: s.updateUser,
		remoting.AuthDeleteUser: s.deleteUser,
		remoting.AuthGetUser:    s.getUser,
		remoting.AuthListUser:   s.listUser,
		remoting.AuthCreateACL:  s.putAcl,
		remoting.AuthUpdateACL:  s.putAcl,
		remoting.AuthDeleteACL:  s.deleteAcl,
		remoting.AuthGetACL:     s.getAcl,
		remoting.AuthListACL:    s.listAcl,
	}
}

// errSystem is handleAuthException's answer to anything but an
// authentication or authorization failure.
const errSystem = "An system error occurred, please try again later."

// reply answers err as handleAuthException does: a Denied is
// NO_PERMISSION with its message, anything else SYSTEM_ERROR.
func reply(req *remoting.Command, err error, body []byte) *remoting.Command {
	var d *Denied
	switch {
	case err == nil:
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = body
		return resp
	case errors.As(err, &d):
		return remoting.NewResponse(req, remoting.NoPermission, d.Msg)
	}
	return remoting.NewResponse(req, remoting.SystemError, errSystem)
}

// decodeJSON reads a fastjson body (RemotingSerializable.decode).
func decodeJSON(body []byte, v any) error {
	if len(body) > maxBody {
		return errors.New("body too large")
	}
	if err := fastjson.Unmarshal(body, v); err != nil {
		return json.Unmarshal(body, v)
	}
	return nil
}

// notSuperLogin is isNotSuperUserLogin: a request without an AccessKey
// counts as a super user's (authentication is off); an unknown key is an
// error, as isSuperUser throws.
func (s *Service) notSuperLogin(req *remoting.Command) (bool, error) {
	ak := req.Ext()["AccessKey"]
	if ak == "" {
		return false, nil
	}
	u, ok := s.md.User(ak)
	if !ok {
		return false, denyf("User:%s is not found", ak)
	}
	return u.UserType != UserSuper, nil
}

// decodeUser is the request's UserInfo with the header's username; a body
// that does not decode is the stock's thrown decode (SYSTEM_ERROR).
func decodeUser(req *remoting.Command) (User, *remoting.Command) {
	hdr, _ := remoting.DecodeHeader[remoting.UserRequestHeader](req) // no field is required
	name := hdr.Username
	if name == "" {
		return User{}, remoting.NewResponse(req, remoting.InvalidParameter, "The username is blank")
	}
	var ui UserInfo
	if len(req.Body) > 0 {
		if err := decodeJSON(req.Body, &ui); err != nil {
			return User{}, remoting.NewResponse(req, remoting.SystemError, "decode UserInfo: "+err.Error())
		}
	}
	ui.Username = name
	return ui.toUser(), nil
}

func (s *Service) createUser(req *remoting.Command) *remoting.Command {
	u, bad := decodeUser(req)
	if bad != nil {
		return bad
	}
	if u.UserType == UserSuper {
		notSuper, err := s.notSuperLogin(req)
		if err != nil {
			return reply(req, err, nil)
		}
		if notSuper {
			return remoting.NewResponse(req, remoting.SystemError, "The super user can only be create by super user")
		}
	}
	return reply(req, s.md.CreateUser(u), nil)
}

func (s *Service) updateUser(req *remoting.Command) *remoting.Command {
	u, bad := decodeUser(req)
	if bad != nil {
		return bad
	}
	notSuper, err := s.notSuperLogin(req)
	if err != nil {
		return reply(req, err, nil)
	}
	if u.UserType == UserSuper && notSuper {
		return remoting.NewResponse(req, remoting.SystemError, "The super user can only be update by super user")
	}
	old, ok := s.md.User(u.Username)
	if !ok {
		return reply(req, &Denied{Msg: "The user is not exist"}, nil)
	}
	if old.UserType == UserSuper && notSuper {
		return reply(req, &Denied{Msg: "The super user can only be update by super user"}, nil)
	}
	return reply(req, s.md.UpdateUser(u), nil)
}

func (s *Service) deleteUser(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.UserRequestHeader](req)
	name := hdr.Username
	if strings.TrimSpace(name) == "" {
		// getUser of a blank name throws before the lookup.
		return reply(req, &Denied{Msg: "username can not be blank"}, nil)
	}
	old, ok := s.md.User(name)
	if !ok {
		return reply(req, nil, nil)
	}
	if old.UserType == UserSuper {
		notSuper, err := s.notSuperLogin(req)
		if err != nil {
			return reply(req, err, nil)
		}
		if notSuper {
			return reply(req, &Denied{Msg: "The super user can only be update by super user"}, nil)
		}
	}
	return reply(req, s.md.DeleteUser(name), nil)
}

func (s *Service) getUser(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.UserRequestHeader](req)
	name := hdr.Username
	if strings.TrimSpace(name) == "" {
		return remoting.NewResponse(req, remoting.InvalidParameter, "The username is blank")
	}
	u, ok := s.md.User(name)
	if !ok {
		return reply(req, nil, nil)
	}
	body, err := json.Marshal(userInfo(u))
	return reply(req, err, body)
}

func (s *Service) listUser(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.ListUsersRequestHeader](req)
	users := s.md.ListUsers(hdr.Filter)
	if len(users) == 0 {
		return reply(req, nil, nil)
	}
	infos := make([]UserInfo, len(users))
	for i, u := range users {
		infos[i] = userInfo(u)
	}
	body, err := json.Marshal(infos)
	return reply(req, err, body)
}

// putAcl is createAcl and updateAcl. A missing body or one without
// policies is thrown in the Java (an AuthorizationException outside the
// future), which the remoting layer answers as SYSTEM_ERROR with the
// exception's simple description.
func (s *Service) putAcl(req *remoting.Command) *remoting.Command {
	var ai AclInfo
	if len(req.Body) > 0 {
		if err := decodeJSON(req.Body, &ai); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, "decode AclInfo: "+err.Error())
		}
	}
	if len(ai.Policies) == 0 {
		frame := "createAcl(AdminBrokerProcessor.java:3158)"
		if req.Code == remoting.AuthUpdateACL {
			frame = "updateAcl(AdminBrokerProcessor.java:3185)"
		}
		return remoting.NewResponse(req, remoting.SystemError,
			"org.apache.rocketmq.auth.authorization.exception.AuthorizationException: The body of acl is null, "+
				"org.apache.rocketmq.broker.processor.AdminBrokerProcessor."+frame)
	}
	subject, ps := ai.convert()
	if subject == "" {
		hdr, _ := remoting.DecodeHeader[remoting.AclRequestHeader](req)
		subject = hdr.Subject
	}
	return reply(req, s.md.PutAcl(subject, ps), nil)
}

func (s *Service) deleteAcl(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.DeleteAclRequestHeader](req)
	var res *Resource
	if r, ok := ParseResource(hdr.Resource); ok {
		res = &r
	}
	return reply(req, s.md.DeleteAcl(hdr.Subject, ParsePolicyType(hdr.PolicyType), res), nil)
}

func (s *Service) getAcl(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.AclRequestHeader](req)
	a, ok, err := s.md.GetAcl(hdr.Subject)
	if err != nil || !ok {
		return reply(req, err, nil)
	}
	body, err := json.Marshal(a.Info())
	return reply(req, err, body)
}

func (s *Service) listAcl(req *remoting.Command) *remoting.Command {
	hdr, _ := remoting.DecodeHeader[remoting.ListAclsRequestHeader](req)
	acls := s.md.ListAcls(hdr.SubjectFilter, hdr.ResourceFilter)
	if len(acls) == 0 {
		return reply(req, nil, nil)
	}
	infos := make([]AclInfo, len(acls))
	for i, a := range acls {
		infos[i] = a.Info()
	}
	body, err := json.Marshal(infos)
	return reply(req, err, body)
}

// Unconfigured are the handlers of 3001-3010 on a broker without ACL 2.0:
// the stock broker serves the codes anyway and, having no metadata
// provider, answers each with handleAuthException's system error.
func Unconfigured() map[int32]Handler {
	out := make(map[int32]Handler)
	for code := range (&Service{}).Processors() {
		out[code] = func(req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, remoting.SystemError, errSystem)
		}
	}
	return out
}
