package auth

import (
	"strings"

	"github.com/rmqio/rmq/message"
)

// UserType and UserStatus are User's enums by their wire names
// (UserType.SUPER "Super", UserStatus.ENABLE "enable", ...); "" is unset.
const (
	UserSuper  = "Super"
	UserNormal = "Normal"
	StatusOn   = "enable"
	StatusOff  = "disable"
)

// User is a 5.3.3 User: the password is the HMAC key of its signatures.
type User struct {
	Username   string `json:"username"`
	Password   string `json:"password"`
	UserType   string `json:"userType,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
}

// SubjectKey is the user's subject ("User:<name>").
func (u *User) SubjectKey() string { return subjectPrefix + u.Username }

const subjectPrefix = "User:"

// canon returns the wire name among names that s equals ignoring case
// (the Java enums' getByName), or "".
func canon(s string, names ...string) string {
	s = strings.TrimSpace(s)
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return n
		}
	}
	return ""
}

// ParseUserType is UserType.getByName ("" when unknown).
func ParseUserType(s string) string { return canon(s, UserSuper, UserNormal) }

// ParseUserStatus is UserStatus.getByName.
func ParseUserStatus(s string) string { return canon(s, StatusOn, StatusOff) }

// Resource types (C/resource/ResourceType) and patterns.
const (
	TypeAny       = "Any"
	TypeCluster   = "Cluster"
	TypeNamespace = "Namespace"
	TypeTopic     = "Topic"
	TypeGroup     = "Group"

	PatternAny      = 1
	PatternLiteral  = 2
	PatternPrefixed = 3
)

// Resource is what a policy entry or a request names.
type Resource struct {
	Type    string
	Name    string
	Pattern int
}

// ParseResource is Resource.of(resourceKey): "*" is any resource,
// "Topic:*" any topic, "Topic:ab*" the prefix ab, "Topic:abc" literal; ok is
// false for a blank key or an unknown type.
func ParseResource(key string) (Resource, bool) {
	if strings.TrimSpace(key) == "" {
		return Resource{}, false
	}
	if key == "*" {
		return Resource{Type: TypeAny, Pattern: PatternAny}, true
	}
	typ, name, _ := strings.Cut(key, ":")
	t := canon(typ, TypeAny, TypeCluster, TypeNamespace, TypeTopic, TypeGroup)
	if t == "" {
		return Resource{}, false
	}
	switch {
	case name == "*":
		return Resource{Type: t, Pattern: PatternAny}, true
	case strings.HasSuffix(name, "*"):
		return Resource{Type: t, Name: name[:strings.Index(name, "*")], Pattern: PatternPrefixed}, true
	}
	return Resource{Type: t, Name: name, Pattern: PatternLiteral}, true
}

// Key is Resource.getResourceKey.
func (r Resource) Key() string {
	if r.Type == TypeAny {
		return "*"
	}
	switch r.Pattern {
	case PatternAny:
		return r.Type + ":*"
	case PatternPrefixed:
		return r.Type + ":" + r.Name + "*"
	}
	return r.Type + ":" + r.Name
}

// The retry and DLQ prefixes that Resource.ofGroup strips.
const (
	retryPrefix = message.RetryTopicPrefix
	dlqPrefix   = message.DLQTopicPrefix
)

func isRetryTopic(t string) bool { return strings.HasPrefix(t, retryPrefix) }

// Topic is Resource.ofTopic.
func Topic(name string) Resource {
	return Resource{Type: TypeTopic, Name: name, Pattern: PatternLiteral}
}

// Group is Resource.ofGroup: a retry or DLQ topic names its group.
func Group(name string) Resource {
	name = strings.TrimPrefix(name, retryPrefix)
	name = strings.TrimPrefix(name, dlqPrefix)
	return Resource{Type: TypeGroup, Name: name, Pattern: PatternLiteral}
}

// Cluster is Resource.ofCluster.
func Cluster(name string) Resource {
	return Resource{Type: TypeCluster, Name: name, Pattern: PatternLiteral}
}

// Match is Resource.isMatch: does the entry's resource r cover req?
func (r Resource) Match(req Resource) bool {
	if r.Type == TypeAny {
		return true
	}
	if r.Type != req.Type {
		return false
	}
	switch r.Pattern {
	case PatternAny:
		return true
	case PatternLiteral:
		return req.Name == r.Name
	case PatternPrefixed:
		return strings.HasPrefix(req.Name, r.Name)
	}
	return false
}

// Actions (C/action/Action) by wire name.
const (
	ActAll    = "All"
	ActAny    = "Any"
	ActPub    = "Pub"
	ActSub    = "Sub"
	ActCreate = "Create"
	ActUpdate = "Update"
	ActDelete = "Delete"
	ActGet    = "Get"
	ActList   = "List"
)

// ParseAction is Action.getByName ("" when unknown).
func ParseAction(s string) string {
	return canon(s, ActAll, ActAny, ActPub, ActSub, ActCreate, ActUpdate, ActDelete, ActGet, ActList)
}

// Decisions and policy types.
const (
	Allow         = "Allow"
	Deny          = "Deny"
	PolicyCustom  = "Custom"
	PolicyDefault = "Default"
)

// ParseDecision is Decision.getByName.
func ParseDecision(s string) string { return canon(s, Allow, Deny) }

// ParsePolicyType is PolicyType.getByName.
func ParsePolicyType(s string) string { return canon(s, PolicyCustom, PolicyDefault) }

// Entry is a PolicyEntry.
type Entry struct {
	Resource  Resource
	Actions   []string
	SourceIPs []string
	Decision  string
}

// Policy is a Policy: its type and entries, at most one per resource.
type Policy struct {
	Type    string
	Entries []Entry
}

// Acl is a subject's policies, at most one per type.
type Acl struct {
	Subject  string
	Policies []Policy
}

func (a *Acl) policy(typ string) *Policy {
	for i := range a.Policies {
		if a.Policies[i].Type == typ {
			return &a.Policies[i]
		}
	}
	return nil
}

// merge is Acl.updatePolicy: a policy of a type the ACL lacks is added; an
// existing one gets the new entries, each replacing the entry of the same
// resource (Policy.updateEntry).
func (a *Acl) merge(ps []Policy) {
	for _, np := range ps {
		old := a.policy(np.Type)
		if old == nil {
			a.Policies = append(a.Policies, np)
			continue
		}
	next:
		for _, ne := range np.Entries {
			for i := range old.Entries {
				if old.Entries[i].Resource == ne.Resource {
					old.Entries[i] = ne
					continue next
				}
			}
			old.Entries = append(old.Entries, ne)
		}
	}
}

// deleteEntry is Acl.deletePolicy: the entry of res goes from the policy of
// typ, and the policy with its last entry.
func (a *Acl) deleteEntry(typ string, res Resource) {
	p := a.policy(typ)
	if p == nil {
		return
	}
	kept := p.Entries[:0]
	for _, e := range p.Entries {
		if e.Resource != res {
			kept = append(kept, e)
		}
	}
	p.Entries = kept
	if len(kept) == 0 {
		out := a.Policies[:0]
		for _, q := range a.Policies {
			if q.Type != typ {
				out = append(out, q)
			}
		}
		a.Policies = out
	}
}

func (a Acl) clone() Acl {
	out := Acl{Subject: a.Subject, Policies: make([]Policy, len(a.Policies))}
	for i, p := range a.Policies {
		out.Policies[i] = Policy{Type: p.Type, Entries: append([]Entry(nil), p.Entries...)}
	}
	return out
}
