package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// BrokerInfo names the broker in GET_BROKER_CLUSTER_ACL_INFO (read at each
// request: the advertised address can change at run time).
type BrokerInfo struct {
	ClusterName, BrokerName, BrokerAddr string
}

// Processors serves the ACL admin requests (AdminBrokerProcessor):
// UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
// GET_BROKER_CLUSTER_ACL_INFO and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG. m is
// nil when aclEnable is false: the stock broker then has no validator and
// fails the three updates with their *_FAILED codes (remark null there,
// a sentence here) and never answers GET_BROKER_CLUSTER_ACL_INFO (a
// NullPointerException it swallows); rmq answers that one SYSTEM_ERROR.
//
// adminOnly is the broker key aclConfigRequiresAdmin: with it (and the ACL
// on) these requests need an admin account, see adminOnlyGate.
func Processors(m *Manager, info func() BrokerInfo, adminOnly bool) map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	procs := processors(m, info)
	if adminOnly && m != nil {
		for code, h := range procs {
			procs[code] = m.adminOnlyGate(h)
		}
	}
	return procs
}

// adminOnlyGate lets a request through to h only when it comes from an
// admin account. In 4.9.8 the ACL requests are not in Permission.ADMIN_CODE:
// any account with a good signature may call UPDATE_AND_CREATE_ACL_CONFIG
// and give itself admin: true, or delete the admin. The gate closes that:
// the request's AccessKey must name an account with admin: true whose
// identity the request proves as the stock check does (the signature, or
// the account's own whiteRemoteAddress). A global white address proves no
// account, so it is not enough here. The refusal is NO_PERMISSION, the code
// the stock broker gives a request it does not permit.
func (m *Manager) adminOnlyGate(h func(*remoting.Conn, *remoting.Command) *remoting.Command) func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return func(c *remoting.Conn, req *remoting.Command) *remoting.Command {
		if ak, ok := m.adminCaller(c.RemoteAddr(), req); !ok {
			return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf(
				"request code=%d changes or reads the ACL and needs an admin account (aclConfigRequiresAdmin=true), but accessKey=%q is not one or is not signed",
				req.Code, ak))
		}
		return h(c, req)
	}
}

// adminCaller reports whether req, from remote ("ip:port"), is from an
// admin account, and the AccessKey it names.
func (m *Manager) adminCaller(remote string, req *remoting.Command) (string, bool) {
	ext := req.Ext()
	ak := ext[FieldAccessKey]
	acc := m.rules.Load().accounts[ak]
	if ak == "" || acc == nil || !acc.admin {
		return ak, false
	}
	if acc.white.match(clientIP(remote)) {
		return ak, true
	}
	sig, ok := ext[FieldSignature]
	return ak, ok && Sign(Content(ext, req.Body, FieldSignature, uniqueKeyQueryFlag), acc.secretKey) == sig
}

// processors are the handlers without the gate.
func processors(m *Manager, info func() BrokerInfo) map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.UpdateAndCreateACLConfig: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			rh, err := remoting.DecodeHeader[remoting.CreateAccessConfigRequestHeader](req)
			if err != nil {
				return remoting.ErrorResponse(req, err)
			}
			c := AccessConfig{
				AccessKey:          rh.AccessKey,
				SecretKey:          rh.SecretKey,
				WhiteRemoteAddress: rh.WhiteRemoteAddress,
				Admin:              rh.Admin,
				DefaultTopicPerm:   rh.DefaultTopicPerm,
				DefaultGroupPerm:   rh.DefaultGroupPerm,
				TopicPerms:         splitList(rh.TopicPerms),
				GroupPerms:         splitList(rh.GroupPerms),
			}
			if m == nil {
				return remoting.NewResponse(req, remoting.UpdateAndCreateACLConfigFailed, errDisabled.Error())
			}
			if err := m.UpdateAccount(c); err != nil {
				return remoting.NewResponse(req, remoting.UpdateAndCreateACLConfigFailed, err.Error())
			}
			return remoting.NewResponse(req, remoting.Success, "")
		},
		remoting.DeleteACLConfig: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			rh, err := remoting.DecodeHeader[remoting.DeleteAccessConfigRequestHeader](req)
			if err != nil {
				return remoting.ErrorResponse(req, err)
			}
			ak := rh.AccessKey
			if m == nil {
				return remoting.NewResponse(req, remoting.DeleteACLConfigFailed, errDisabled.Error())
			}
			if err := m.DeleteAccount(ak); err != nil {
				remark := err.Error()
				if errors.Is(err, ErrNotFound) {
					remark = "The accesskey[" + ak + "] corresponding to accessConfig has been deleted failed."
				}
				return remoting.NewResponse(req, remoting.DeleteACLConfigFailed, remark)
			}
			return remoting.NewResponse(req, remoting.Success, "")
		},
		// Both fields are @CFNotNull in UpdateGlobalWhiteAddrsConfigRequestHeader,
		// but 4.9.8's RemotingCommand.decodeCommandCustomHeader only logs a
		// missing one ("Failed field [...] decoding") and leaves it null: mqadmin
		// updateGlobalWhiteAddr without -p sends no aclFileFullPath, and the
		// broker updates its default file (PlainPermissionManager.
		// updateGlobalWhiteAddrsConfig); without globalWhiteAddrs the list is
		// null and the update fails.
		remoting.UpdateGlobalWhiteAddrsConfig: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			// Neither field is required, so the decode cannot fail.
			rh, _ := remoting.DecodeHeader[remoting.UpdateGlobalWhiteAddrsConfigRequestHeader](req)
			addrs, path := rh.GlobalWhiteAddrs, rh.AclFileFullPath
			if m == nil {
				return remoting.NewResponse(req, remoting.UpdateGlobalWhiteAddrsConfigFailed, errDisabled.Error())
			}
			if addrs == nil {
				return remoting.NewResponse(req, remoting.UpdateGlobalWhiteAddrsConfigFailed,
					"The globalWhiteAddresses[null] has been updated failed.")
			}
			if err := m.UpdateGlobalWhiteAddrs(javaSplit(*addrs), path); err != nil {
				return remoting.NewResponse(req, remoting.UpdateGlobalWhiteAddrsConfigFailed,
					"The globalWhiteAddresses["+*addrs+"] has been updated failed.")
			}
			return remoting.NewResponse(req, remoting.Success, "")
		},
		remoting.GetBrokerClusterACLInfo: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			if m == nil {
				return remoting.NewResponse(req, remoting.SystemError, errDisabled.Error())
			}
			v := m.Version()
			version, _ := json.Marshal(v)
			all, _ := json.Marshal(map[string]DataVersion{m.Path(): v})
			resp := remoting.NewResponse(req, remoting.Success, "")
			bi := info()
			(&remoting.GetBrokerAclConfigResponseHeader{
				Version: string(version), AllAclFileVersion: string(all),
				BrokerName: bi.BrokerName, BrokerAddr: bi.BrokerAddr, ClusterName: bi.ClusterName,
			}).Encode(resp)
			return resp
		},
	}
}

var errDisabled = errors.New("ACL is not enabled on this broker (aclEnable=false)")

// splitList is UtilAll.split(value, ","): nil when absent.
func splitList(v *string) []string {
	if v == nil {
		return nil
	}
	return javaSplit(*v)
}

// javaSplit is String.split(","): trailing empty strings are dropped,
// and a value without a comma is one element (even when empty).
func javaSplit(s string) []string {
	parts := strings.Split(s, ",")
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}
