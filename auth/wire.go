package auth

import "strings"

// The bodies of codes 3001-3010 (P/body/UserInfo, AclInfo), with their
// fields in the alphabetical order fastjson writes them; a nil field is
// left out, as fastjson leaves out nulls.

// UserInfo is the wire form of a User.
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is the wire form of an Acl.
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitempty"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is AclInfo.PolicyInfo.
type PolicyInfo struct {
	Entries    []EntryInfo `json:"entries,omitempty"`
	PolicyType string      `json:"policyType,omitempty"`
}

// EntryInfo is AclInfo.PolicyEntryInfo.
type EntryInfo struct {
	Actions   []string `json:"actions,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIps []string `json:"sourceIps,omitempty"`
}

// userInfo is UserConverter.convertUser(User).
func userInfo(u User) UserInfo {
	return UserInfo{Username: u.Username, Password: u.Password, UserType: u.UserType, UserStatus: u.UserStatus}
}

// toUser is UserConverter.convertUser(UserInfo): unknown type or status
// names become unset.
func (ui UserInfo) toUser() User {
	return User{Username: ui.Username, Password: ui.Password, UserType: ParseUserType(ui.UserType), UserStatus: ParseUserStatus(ui.UserStatus)}
}

// Info is AclConverter.convertAcl(Acl).
func (a Acl) Info() AclInfo {
	out := AclInfo{Subject: a.Subject}
	for _, p := range a.Policies {
		pi := PolicyInfo{PolicyType: p.Type}
		for _, e := range p.Entries {
			pi.Entries = append(pi.Entries, EntryInfo{
				Resource: e.Resource.Key(), Actions: append([]string(nil), e.Actions...),
				SourceIps: append([]string(nil), e.SourceIPs...), Decision: e.Decision,
			})
		}
		out.Policies = append(out.Policies, pi)
	}
	return out
}

// entryInput is a policy entry as the request gave it: the resource may
// not parse and the decision may be unknown; validate reports both.
type entryInput struct {
	Entry
	resourceOK bool
}

type policyInput struct {
	typ     string
	entries []entryInput
}

// convert is AclConverter.convertAcl(AclInfo): policies without entries
// are skipped, unknown actions dropped, the subject taken from the body
// when it has one.
func (ai AclInfo) convert() (subject string, ps []policyInput) {
	for _, p := range ai.Policies {
		if len(p.Entries) == 0 {
			continue
		}
		pi := policyInput{typ: ParsePolicyType(p.PolicyType)}
		for _, e := range p.Entries {
			r, ok := ParseResource(e.Resource)
			var acts []string
			for _, a := range e.Actions {
				if n := ParseAction(a); n != "" {
					acts = append(acts, n)
				}
			}
			pi.entries = append(pi.entries, entryInput{
				Entry:      Entry{Resource: r, Actions: acts, SourceIPs: e.SourceIps, Decision: ParseDecision(e.Decision)},
				resourceOK: ok,
			})
		}
		ps = append(ps, pi)
	}
	return strings.TrimSpace(ai.Subject), ps
}
