package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/remoting"
)

// AclConfig is what updateAclConfig sends (PlainAccessConfig as the
// CreateAccessConfigRequestHeader carries it); empty optional fields are
// not sent, so the broker keeps the account's value.
type AclConfig struct {
	AccessKey          string `json:"accessKey"`
	SecretKey          string `json:"-"` // not echoed by --json
	WhiteRemoteAddress string `json:"whiteRemoteAddress,omitempty"`
	Admin              bool   `json:"admin"`
	DefaultTopicPerm   string `json:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string `json:"defaultGroupPerm,omitempty"`
	TopicPerms         string `json:"topicPerms,omitempty"` // "topicA=DENY,topicB=SUB"
	GroupPerms         string `json:"groupPerms,omitempty"`
	// SetWhiteRemoteAddress sends WhiteRemoteAddress even when empty.
	SetWhiteRemoteAddress bool `json:"-"`
}

func (c AclConfig) header() map[string]string {
	set := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	h := remoting.CreateAccessConfigRequestHeader{
		AccessKey: c.AccessKey, Admin: c.Admin, SecretKey: set(c.SecretKey),
		DefaultTopicPerm: set(c.DefaultTopicPerm), DefaultGroupPerm: set(c.DefaultGroupPerm),
		TopicPerms: set(c.TopicPerms), GroupPerms: set(c.GroupPerms),
	}
	if c.WhiteRemoteAddress != "" || c.SetWhiteRemoteAddress {
		h.WhiteRemoteAddress = &c.WhiteRemoteAddress
	}
	return h.Fields()
}

// brokerTargets is addr, or every master of cluster.
func (a *Admin) brokerTargets(ctx context.Context, addr, cluster string) ([]string, error) {
	if addr != "" {
		return []string{addr}, nil
	}
	return a.MasterAddrs(ctx, cluster)
}

// UpdateAclConfig sends UPDATE_AND_CREATE_ACL_CONFIG to the broker at addr
// or to every master of cluster, returning the brokers updated.
func (a *Admin) UpdateAclConfig(ctx context.Context, addr, cluster string, c AclConfig) ([]string, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range targets {
		if _, err := a.callBroker(ctx, t, newRequest(remoting.UpdateAndCreateACLConfig, c.header(), nil)); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}

// DeleteAclConfig sends DELETE_ACL_CONFIG for accessKey.
func (a *Admin) DeleteAclConfig(ctx context.Context, addr, cluster, accessKey string) ([]string, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range targets {
		req := newRequest(remoting.DeleteACLConfig, (&remoting.DeleteAccessConfigRequestHeader{AccessKey: accessKey}).Fields(), nil)
		if _, err := a.callBroker(ctx, t, req); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}

// UpdateGlobalWhiteAddr sends UPDATE_GLOBAL_WHITE_ADDRS_CONFIG. The header's
// aclFileFullPath is required by the broker; when path is empty the file
// each broker reports in GET_BROKER_CLUSTER_ACL_INFO is used.
func (a *Admin) UpdateGlobalWhiteAddr(ctx context.Context, addr, cluster, addrs, path string) ([]string, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range targets {
		p := path
		if p == "" {
			v, err := a.AclConfigVersion(ctx, t)
			if err != nil {
				return done, err
			}
			for _, f := range v.Files {
				p = f.Path
			}
		}
		req := newRequest(remoting.UpdateGlobalWhiteAddrsConfig, (&remoting.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: &addrs, AclFileFullPath: p}).Fields(), nil)
		if _, err := a.callBroker(ctx, t, req); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}

// AclVersion is one broker's answer to GET_BROKER_CLUSTER_ACL_INFO.
type AclVersion struct {
	ClusterName string           `json:"clusterName"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddr  string           `json:"brokerAddr"`
	Version     acl.DataVersion  `json:"version"`
	Files       []AclFileVersion `json:"files"`
}

// AclFileVersion is the version of one ACL file of a broker.
type AclFileVersion struct {
	Path    string          `json:"path"`
	Version acl.DataVersion `json:"version"`
}

// AclConfigVersion asks the broker at addr for its ACL file versions.
func (a *Admin) AclConfigVersion(ctx context.Context, addr string) (AclVersion, error) {
	resp, err := a.callBroker(ctx, addr, newRequest(remoting.GetBrokerClusterACLInfo, nil, nil))
	if err != nil {
		return AclVersion{}, err
	}
	rh, _ := remoting.DecodeHeader[remoting.GetBrokerAclConfigResponseHeader](resp) // no field is required
	v := AclVersion{ClusterName: rh.ClusterName, BrokerName: rh.BrokerName, BrokerAddr: rh.BrokerAddr}
	if err := json.Unmarshal([]byte(rh.Version), &v.Version); err != nil {
		return v, fmt.Errorf("%w: broker %s answered GET_BROKER_CLUSTER_ACL_INFO with version %q", ErrBadBody, addr, rh.Version)
	}
	var all map[string]acl.DataVersion
	if s := rh.AllAclFileVersion; s != "" {
		if err := json.Unmarshal([]byte(s), &all); err != nil {
			return v, fmt.Errorf("%w: broker %s answered GET_BROKER_CLUSTER_ACL_INFO with allAclFileVersion %q", ErrBadBody, addr, s)
		}
	}
	for p, dv := range all {
		v.Files = append(v.Files, AclFileVersion{Path: p, Version: dv})
	}
	sort.Slice(v.Files, func(i, j int) bool { return v.Files[i].Path < v.Files[j].Path })
	return v, nil
}

// ClusterAclConfigVersion is AclConfigVersion of addr, or of every master
// of cluster.
func (a *Admin) ClusterAclConfigVersion(ctx context.Context, addr, cluster string) ([]AclVersion, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	out := make([]AclVersion, 0, len(targets))
	for _, t := range targets {
		v, err := a.AclConfigVersion(ctx, t)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// PrintAclVersions prints as mqadmin clusterAclConfigVersion does (the
// heading only for -c; times in the local zone).
func PrintAclVersions(w io.Writer, rows []AclVersion, cluster bool) {
	if cluster {
		fmt.Fprintf(w, "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s\n",
			"#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
	}
	for _, r := range rows {
		for _, f := range r.Files {
			fmt.Fprintf(w, "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s\n", r.ClusterName, r.BrokerName, r.BrokerAddr, f.Path,
				strconv.FormatInt(f.Version.Counter, 10), time.UnixMilli(f.Version.Timestamp).Format("2006-01-02 15:04:05"))
		}
	}
	if cluster {
		fmt.Fprintf(w, "get cluster's plain access config version success.\n")
	} else {
		fmt.Fprintf(w, "get broker's plain access config version success.\n")
	}
}
