package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rmqio/rmq/store"
)

// FileName is the metadata file under <storePathRootDir>/config.
const FileName = "auth.json"

// maxFileSize bounds what Open reads (a user or ACL is small; this is
// far above any real deployment).
const maxFileSize = 64 << 20

// fileData is auth.json: the users and ACLs in their wire forms, sorted
// by name and subject so that equal states are equal files.
type fileData struct {
	Users []UserInfo `json:"users"`
	Acls  []AclInfo  `json:"acls"`
}

// Metadata holds the users and ACLs (the Local*MetadataProvider and the
// *MetadataManagerImpl rules over them). Reads take a read lock; every
// change rewrites the file before it is visible, so what a reply
// acknowledges is on disk.
type Metadata struct {
	path string
	// write is store.WriteFileAtomic; tests replace it to fail.
	write func(path string, data []byte) error

	mu    sync.RWMutex
	users map[string]User
	acls  map[string]Acl // by subject key
}

// OpenMetadata loads path (absent: no users, no ACLs); changes are written
// through fsys (nil: the OS's file system).
func OpenMetadata(fsys store.FS, path string) (*Metadata, error) {
	write := func(p string, data []byte) error { return store.WriteFileAtomic(fsys, p, data) }
	m := &Metadata{path: path, write: write, users: map[string]User{}, acls: map[string]Acl{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxFileSize {
		return nil, fmt.Errorf("auth: %s is %d bytes, more than %d", path, st.Size(), maxFileSize)
	}
	var d fileData
	if err := json.NewDecoder(f).Decode(&d); err != nil {
		return nil, fmt.Errorf("auth: %s: %w", path, err)
	}
	for _, ui := range d.Users {
		m.users[ui.Username] = ui.toUser()
	}
	for _, ai := range d.Acls {
		subj, ps := ai.convert()
		a := Acl{Subject: subj}
		for _, p := range ps {
			q := Policy{Type: p.typ}
			for _, e := range p.entries {
				if e.resourceOK {
					q.Entries = append(q.Entries, e.Entry)
				}
			}
			a.Policies = append(a.Policies, q)
		}
		m.acls[subj] = a
	}
	return m, nil
}

// Path is the file's path.
func (m *Metadata) Path() string { return m.path }

// commit writes users and acls and installs them; on failure nothing
// changes. The caller holds mu.
func (m *Metadata) commit(users map[string]User, acls map[string]Acl) error {
	var d fileData
	for _, u := range users {
		d.Users = append(d.Users, userInfo(u))
	}
	sort.Slice(d.Users, func(i, j int) bool { return d.Users[i].Username < d.Users[j].Username })
	for _, a := range acls {
		d.Acls = append(d.Acls, a.Info())
	}
	sort.Slice(d.Acls, func(i, j int) bool { return d.Acls[i].Subject < d.Acls[j].Subject })
	raw, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := m.write(m.path, raw); err != nil {
		return err
	}
	m.users, m.acls = users, acls
	return nil
}

// change runs f on copies of the state and commits what it leaves.
func (m *Metadata) change(f func(users map[string]User, acls map[string]Acl) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	users := make(map[string]User, len(m.users)+1)
	for k, v := range m.users {
		users[k] = v
	}
	acls := make(map[string]Acl, len(m.acls)+1)
	for k, v := range m.acls {
		acls[k] = v
	}
	if err := f(users, acls); err != nil {
		return err
	}
	return m.commit(users, acls)
}

// User is the user named name, ok false when there is none.
func (m *Metadata) User(name string) (User, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	u, ok := m.users[name]
	return u, ok
}

// Acl is the ACL of subject (a subject key).
func (m *Metadata) Acl(subject string) (Acl, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, ok := m.acls[subject]
	if !ok {
		return Acl{}, false
	}
	return a.clone(), true
}

// CreateUser is AuthenticationMetadataManagerImpl.createUser.
func (m *Metadata) CreateUser(u User) error {
	if strings.TrimSpace(u.Username) == "" {
		return &Denied{Msg: "username can not be blank"}
	}
	if strings.TrimSpace(u.Password) == "" {
		return &Denied{Msg: "password can not be blank"}
	}
	if u.UserType == "" {
		u.UserType = UserNormal
	}
	if u.UserStatus == "" {
		u.UserStatus = StatusOn
	}
	return m.change(func(users map[string]User, _ map[string]Acl) error {
		if _, ok := users[u.Username]; ok {
			return &Denied{Msg: "The user is existed"}
		}
		users[u.Username] = u
		return nil
	})
}

// UpdateUser is updateUser: a non-blank password and a set type or status
// replace the old ones.
func (m *Metadata) UpdateUser(u User) error {
	if strings.TrimSpace(u.Username) == "" {
		return &Denied{Msg: "username can not be blank"}
	}
	return m.change(func(users map[string]User, _ map[string]Acl) error {
		old, ok := users[u.Username]
		if !ok {
			return &Denied{Msg: "The user is not exist"}
		}
		if strings.TrimSpace(u.Password) != "" {
			old.Password = u.Password
		}
		if u.UserType != "" {
			old.UserType = u.UserType
		}
		if u.UserStatus != "" {
			old.UserStatus = u.UserStatus
		}
		users[u.Username] = old
		return nil
	})
}

// DeleteUser drops the user and its ACL (one write).
func (m *Metadata) DeleteUser(name string) error {
	if strings.TrimSpace(name) == "" {
		return &Denied{Msg: "username can not be blank"}
	}
	return m.change(func(users map[string]User, acls map[string]Acl) error {
		delete(users, name)
		delete(acls, subjectPrefix+name)
		return nil
	})
}

// ListUsers is listUser: the users whose name contains filter (all for a
// blank one), by name.
func (m *Metadata) ListUsers(filter string) []User {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []User
	for _, u := range m.users {
		if strings.TrimSpace(filter) == "" || strings.Contains(u.Username, filter) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Username, b.Username) })
	return out
}

// validate is AuthorizationMetadataManagerImpl.validate of one request's
// policies.
func validate(ps []policyInput) error {
	if len(ps) == 0 {
		return &Denied{Msg: "The policies is empty."}
	}
	for _, p := range ps {
		for _, e := range p.entries {
			switch {
			case !e.resourceOK:
				return &Denied{Msg: "The resource is null."}
			case len(e.Actions) == 0:
				return &Denied{Msg: "The actions is empty."}
			case slices.Contains(e.Actions, ActAny):
				return &Denied{Msg: "The actions can not be Any."}
			}
			for _, ip := range e.SourceIPs {
				if strings.TrimSpace(ip) == "" {
					return &Denied{Msg: "The source ip is empty."}
				}
				if !validIPOrCIDR(ip) {
					return &Denied{Msg: "The source ip is invalid."}
				}
			}
			if e.Decision == "" {
				return &Denied{Msg: "The decision is null or illegal."}
			}
		}
	}
	return nil
}

// userOfSubject is the username of a subject key ("User:x"), ok false for
// any other subject type (5.3.3 has only users).
func userOfSubject(subject string) (string, bool) {
	typ, name, ok := strings.Cut(subject, ":")
	if !ok || !strings.EqualFold(typ, "User") {
		return "", false
	}
	return name, true
}

// PutAcl is createAcl and updateAcl (identical): the subject must be an
// existing user; an existing ACL is merged (Acl.updatePolicy), a missing
// policy type is Custom.
func (m *Metadata) PutAcl(subject string, in []policyInput) error {
	name, ok := userOfSubject(subject)
	if !ok {
		return &Denied{Msg: "The subject type is null."}
	}
	if err := validate(in); err != nil {
		return err
	}
	var ps []Policy
	for _, p := range in {
		q := Policy{Type: p.typ}
		if q.Type == "" {
			q.Type = PolicyCustom
		}
		for _, e := range p.entries {
			q.Entries = append(q.Entries, e.Entry)
		}
		ps = append(ps, q)
	}
	key := subjectPrefix + name
	return m.change(func(users map[string]User, acls map[string]Acl) error {
		if _, ok := users[name]; !ok {
			return denyf("The subject of %s is not exist.", key)
		}
		old, ok := acls[key]
		if !ok {
			acls[key] = Acl{Subject: key, Policies: ps}
			return nil
		}
		old = old.clone()
		old.merge(ps)
		acls[key] = old
		return nil
	})
}

// DeleteAcl is deleteAcl: with no resource the whole ACL goes, else the
// entry of res from the policy of typ (Custom when blank), and the ACL with
// its last policy.
func (m *Metadata) DeleteAcl(subject, typ string, res *Resource) error {
	name, ok := userOfSubject(subject)
	if !ok {
		return &Denied{Msg: "The subject is null."}
	}
	if typ == "" {
		typ = PolicyCustom
	}
	key := subjectPrefix + name
	return m.change(func(users map[string]User, acls map[string]Acl) error {
		if _, ok := users[name]; !ok {
			return &Denied{Msg: "The subject is not exist."}
		}
		old, ok := acls[key]
		if !ok {
			return &Denied{Msg: "The acl is not exist."}
		}
		if res == nil {
			delete(acls, key)
			return nil
		}
		old = old.clone()
		old.deleteEntry(typ, *res)
		if len(old.Policies) == 0 {
			delete(acls, key)
		} else {
			acls[key] = old
		}
		return nil
	})
}

// GetAcl is getAcl: the subject must exist.
func (m *Metadata) GetAcl(subject string) (Acl, bool, error) {
	name, ok := userOfSubject(subject)
	if !ok {
		return Acl{}, false, &Denied{Msg: "The subject is not exist."}
	}
	if _, ok := m.User(name); !ok {
		return Acl{}, false, &Denied{Msg: "The subject is not exist."}
	}
	a, ok := m.Acl(subjectPrefix + name)
	return a, ok, nil
}

// ListAcls is listAcl: the ACLs whose subject key contains subjectFilter;
// with a resourceFilter that the subject key does not contain, only the
// entries whose resource key contains it are kept, and an ACL left with
// nothing is omitted.
func (m *Metadata) ListAcls(subjectFilter, resourceFilter string) []Acl {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Acl
	for key, a := range m.acls {
		if strings.TrimSpace(subjectFilter) != "" && !strings.Contains(key, subjectFilter) {
			continue
		}
		a = a.clone()
		var ps []Policy
		for _, p := range a.Policies {
			if strings.TrimSpace(resourceFilter) != "" && !strings.Contains(key, resourceFilter) {
				kept := p.Entries[:0]
				for _, e := range p.Entries {
					if strings.Contains(e.Resource.Key(), resourceFilter) {
						kept = append(kept, e)
					}
				}
				p.Entries = kept
			}
			if len(p.Entries) > 0 {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			a.Policies = ps
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y Acl) int { return strings.Compare(x.Subject, y.Subject) })
	return out
}

// PutAclInfo is PutAcl of a wire-form ACL (its subject, else subject).
func (m *Metadata) PutAclInfo(subject string, ai AclInfo) error {
	s, ps := ai.convert()
	if s == "" {
		s = subject
	}
	return m.PutAcl(s, ps)
}
