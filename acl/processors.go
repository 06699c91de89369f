package acl

import (
	"encoding/json"
	"errors"
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
func Processors(m *Manager, info func() BrokerInfo) map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.UpdateAndCreateACLConfig: func(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
			h := req.Header()
			c := AccessConfig{
				AccessKey:          h.Str("accessKey", true),
				SecretKey:          optional(h, "secretKey"),
				WhiteRemoteAddress: optional(h, "whiteRemoteAddress"),
				Admin:              h.Bool("admin"),
				DefaultTopicPerm:   optional(h, "defaultTopicPerm"),
				DefaultGroupPerm:   optional(h, "defaultGroupPerm"),
				TopicPerms:         splitList(h, "topicPerms"),
				GroupPerms:         splitList(h, "groupPerms"),
			}
			if err := h.Err(); err != nil {
				return remoting.ErrorResponse(req, err)
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
			h := req.Header()
			ak := h.Str("accessKey", true)
			if err := h.Err(); err != nil {
				return remoting.ErrorResponse(req, err)
			}
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
			h := req.Header()
			addrs := optional(h, "globalWhiteAddrs")
			path := h.Str("aclFileFullPath", false)
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
			resp.SetExt("version", string(version))
			resp.SetExt("allAclFileVersion", string(all))
			bi := info()
			resp.SetExt("brokerName", bi.BrokerName)
			resp.SetExt("brokerAddr", bi.BrokerAddr)
			resp.SetExt("clusterName", bi.ClusterName)
			return resp
		},
	}
}

var errDisabled = errors.New("ACL is not enabled on this broker (aclEnable=false)")

func optional(h *remoting.Header, key string) *string {
	if !h.Has(key) {
		return nil
	}
	v := h.Str(key, false)
	return &v
}

// splitList is UtilAll.split(value, ","): nil when absent.
func splitList(h *remoting.Header, key string) []string {
	if !h.Has(key) {
		return nil
	}
	return javaSplit(h.Str(key, false))
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
