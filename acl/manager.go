package acl

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// ReloadInterval is how often the broker looks at the file for changes
// (AclFileWatchService.WATCH_INTERVAL).
const ReloadInterval = 5000 // ms

// Manager holds the rules of one plain_acl.yml and checks requests
// against them. Check reads a snapshot without locking; changes (Reload,
// the admin requests) are serialised.
type Manager struct {
	path  string
	clock clock.Clock
	mu    sync.Mutex // serialises reloads and rewrites
	rules atomic.Pointer[rules]
}

// Open loads path, creating an empty file when there is none (as the stock
// broker creates its default file). A file that does not load is an error:
// the stock broker does not start with it either.
func Open(path string, clk clock.Clock) (*Manager, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	m := &Manager{path: abs, clock: clk}
	f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	f.Close()
	if _, err := m.Reload(); err != nil {
		return nil, err
	}
	return m, nil
}

// Admin reports whether accessKey names an admin account (admin: true)
// whose secretKey is secretKey. The broker's web console asks it for HTTP
// basic credentials; the comparison of the secret takes the same time
// whatever it matches.
func (m *Manager) Admin(accessKey, secretKey string) bool {
	acc := m.rules.Load().accounts[accessKey]
	if acc == nil || !acc.admin {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(acc.secretKey), []byte(secretKey)) == 1
}

// Path is the absolute path of the managed file.
func (m *Manager) Path() string { return m.path }

// Reload reads the files again and, when their bytes changed, replaces
// the rules. A file that no longer loads leaves the rules as they were and
// is reported.
func (m *Manager) Reload() (changed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, err := os.ReadFile(m.path)
	if err != nil {
		return false, fmt.Errorf("acl: %w", err)
	}
	extras, err := readExtraFiles(m.extraDir())
	if err != nil {
		return false, err
	}
	if old := m.rules.Load(); old != nil && bytes.Equal(old.raw, raw) && bytes.Equal(old.extraSig, extrasSignature(extras)) {
		return false, nil
	}
	if err := m.installWith(raw, extras); err != nil {
		return false, fmt.Errorf("acl: %s: %w", m.path, err)
	}
	return true, nil
}

// install replaces the rules with the managed file's raw and the extra
// files as they are on disk.
func (m *Manager) install(raw []byte) error {
	extras, err := readExtraFiles(m.extraDir())
	if err != nil {
		return err
	}
	return m.installWith(raw, extras)
}

// installWith compiles the extra files, then the managed file, and merges
// them as stock PlainPermissionManager.load does (the files under conf/acl
// first, the default file last): an AccessKey counts from the first file
// that has it, the global white addresses of every file apply, and the
// version is the managed file's.
func (m *Manager) installWith(raw []byte, extras []extraFile) error {
	f, err := parseFile(raw)
	if err != nil {
		return err
	}
	// A file without dataVersion gets a fresh one (new DataVersion(): now, counter 0).
	r, err := compile(f, DataVersion{Timestamp: m.clock.Now().UnixMilli()})
	if err != nil {
		return err
	}
	if len(extras) > 0 {
		merged := &rules{accounts: make(map[string]*account), version: r.version}
		for _, x := range append(extras, extraFile{path: m.path}) {
			xr := r
			if x.path != m.path {
				xf, err := parseFile(x.raw)
				if err != nil {
					return fmt.Errorf("%s: %w", x.path, err)
				}
				if xr, err = compile(xf, r.version); err != nil {
					return fmt.Errorf("%s: %w", x.path, err)
				}
			}
			merged.global = append(merged.global, xr.global...)
			for ak, acc := range xr.accounts {
				if _, dup := merged.accounts[ak]; !dup {
					merged.accounts[ak] = acc
				}
			}
		}
		r = merged
	}
	r.raw, r.extraSig = raw, extrasSignature(extras)
	m.rules.Store(r)
	return nil
}

// extraDir is the directory of the extra ACL files: "acl" beside the
// managed file, which for the stock default $ROCKETMQ_HOME/conf/plain_acl.yml
// is the stock $ROCKETMQ_HOME/conf/acl.
func (m *Manager) extraDir() string { return filepath.Join(filepath.Dir(m.path), "acl") }

// extraFile is one .yml/.yaml file under the extra directory.
type extraFile struct {
	path string
	raw  []byte
}

// readExtraFiles reads every .yml and .yaml file under dir, subdirectories
// included (stock getAllAclFiles), in path order; no directory is none.
func readExtraFiles(dir string) ([]extraFile, error) {
	var out []extraFile
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, os.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, extraFile{path: path, raw: raw})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	return out, nil
}

// extrasSignature identifies the extra files' names and contents, so that a
// reload sees a file added, removed or changed.
func extrasSignature(extras []extraFile) []byte {
	var b bytes.Buffer
	for _, x := range extras {
		b.WriteString(x.path)
		b.WriteByte(0)
		b.Write(x.raw)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// Version is the file's data version.
func (m *Manager) Version() DataVersion { return m.rules.Load().version }

// Denied is a refused request. The stock broker's rpc hook throws an
// AclException, which the remoting layer answers with SYSTEM_ERROR and
// the exception's simple description as the remark (Remark).
type Denied struct {
	Msg   string
	frame string // the top stack frame of the stock exception
}

func (d *Denied) Error() string { return d.Msg }

// Remark is RemotingHelper.exceptionSimpleDesc of the stock AclException.
func (d *Denied) Remark() string {
	return "org.apache.rocketmq.acl.common.AclException: " + d.Msg + ", " + d.frame
}

// The stock throw sites (rocketmq-acl 4.9.8).
const (
	frameParse      = "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
	frameNoKey      = "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
	frameNoAccount  = "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:668)"
	frameSignature  = "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:684)"
	frameAdmin      = "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)"
	frameDefaultPer = "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)"
	frameOwnedPerm  = "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"
)

// Check decides one request from remote ("ip:port"), as
// PlainAccessValidator.parse and PlainPermissionManager.validate do: a
// global white address passes; otherwise the AccessKey must be known; the
// account's white address passes; otherwise the signature must match, the
// code must not need an admin the account is not, and every topic and
// group the request names must be permitted. nil means allowed; a refusal
// is a *Denied.
func (m *Manager) Check(remote string, req *remoting.Command) error {
	ext := req.Ext()
	var need resources
	if len(ext) > 0 { // Java skips parsing a request without extFields
		var err error
		if need, err = requestResources(req, ext); err != nil {
			return &Denied{Msg: err.Error(), frame: frameParse}
		}
	}
	ak, hasKey := ext[FieldAccessKey]
	return m.validate(remote, req.Code, ak, hasKey, func(secretKey string) bool {
		sig, ok := ext[FieldSignature]
		return ok && Sign(Content(ext, req.Body, FieldSignature, uniqueKeyQueryFlag), secretKey) == sig
	}, need)
}

// validate is PlainPermissionManager.validate, shared by the remoting
// (Check) and the gRPC (CheckGrpc) requests once they are parsed: ak is
// the request's AccessKey (hasKey false when it brings none), signed
// reports whether its signature matches the account's secret key, need is
// what it touches.
func (m *Manager) validate(remote string, code int32, ak string, hasKey bool, signed func(secretKey string) bool, need resources) error {
	r := m.rules.Load()
	ip := clientIP(remote)
	for _, g := range r.global {
		if g.match(ip) {
			return nil
		}
	}
	if !hasKey {
		return &Denied{Msg: "No accessKey is configured", frame: frameNoKey}
	}
	acc := r.accounts[ak]
	if acc == nil {
		return &Denied{Msg: "No acl config for " + ak, frame: frameNoAccount}
	}
	if acc.white.match(ip) {
		return nil
	}
	if !signed(acc.secretKey) {
		return &Denied{Msg: "Check signature failed for accessKey=" + ak, frame: frameSignature}
	}
	for _, n := range need.list {
		if n.resource == traceTopic && n.perm == PermPub {
			return nil // message trace sends skip the permission check
		}
	}
	if NeedsAdmin(code) && !acc.admin {
		return &Denied{Msg: fmt.Sprintf("Need admin permission for request code=%d, but accessKey=%s is not", code, ak), frame: frameAdmin}
	}
	if len(need.list) == 0 || (acc.perms == nil && acc.admin) {
		return nil
	}
	for _, n := range need.hashOrder() {
		group := strings.HasPrefix(n.resource, retryPrefix)
		owned, listed := acc.perms[n.resource]
		frame := frameOwnedPerm
		if !listed {
			owned, frame = acc.defTopic, frameDefaultPer
			if group {
				owned = acc.defGroup
			}
		}
		if !permits(n.perm, owned) {
			return &Denied{Msg: "No default permission for " + printResource(n.resource, group), frame: frame}
		}
	}
	return nil
}

func printResource(res string, group bool) string {
	if group {
		return "group:" + res[len(retryPrefix):]
	}
	return "topic:" + res
}

// AccessConfig is an UPDATE_AND_CREATE_ACL_CONFIG request
// (CreateAccessConfigRequestHeader); nil fields leave the account's value.
type AccessConfig struct {
	AccessKey          string
	SecretKey          *string
	WhiteRemoteAddress *string
	Admin              bool
	DefaultTopicPerm   *string
	DefaultGroupPerm   *string
	TopicPerms         []string // nil: unchanged
	GroupPerms         []string
}

// ErrNotFound: DELETE_ACL_CONFIG for an AccessKey the file does not have.
var ErrNotFound = errors.New("acl: no such accessKey")

// UpdateAccount creates or updates an account
// (PlainPermissionManager.updateAccessConfig): the account keeps the fields
// the request leaves out, moves to the end of the list, and the file's
// version is bumped.
func (m *Manager) UpdateAccount(c AccessConfig) error {
	sk := ""
	if c.SecretKey != nil {
		sk = *c.SecretKey
	}
	if len(c.AccessKey) <= minKeyLen || len(sk) <= minKeyLen {
		return fmt.Errorf("The accessKey=%s and secretKey=%s cannot be null and length should longer than 6", c.AccessKey, javaStrPtr(c.SecretKey))
	}
	if err := checkResourcePerms(c.TopicPerms); err != nil {
		return err
	}
	if err := checkResourcePerms(c.GroupPerms); err != nil {
		return err
	}
	return m.rewrite(func(f *File) error {
		a := Account{AccessKey: c.AccessKey}
		for i := range f.Accounts {
			if f.Accounts[i].AccessKey == c.AccessKey {
				a = f.Accounts[i]
				f.Accounts = append(f.Accounts[:i], f.Accounts[i+1:]...)
				break
			}
		}
		a.SecretKey = sk
		if c.WhiteRemoteAddress != nil {
			a.WhiteRemoteAddress = *c.WhiteRemoteAddress
		}
		a.Admin = c.Admin
		if c.DefaultTopicPerm != nil && *c.DefaultTopicPerm != "" {
			a.DefaultTopicPerm = *c.DefaultTopicPerm
		}
		if c.DefaultGroupPerm != nil && *c.DefaultGroupPerm != "" {
			a.DefaultGroupPerm = *c.DefaultGroupPerm
		}
		if c.TopicPerms != nil {
			a.TopicPerms = c.TopicPerms
		}
		if c.GroupPerms != nil {
			a.GroupPerms = c.GroupPerms
		}
		f.Accounts = append(f.Accounts, a)
		return nil
	})
}

// DeleteAccount removes an account (deleteAccessConfig).
func (m *Manager) DeleteAccount(accessKey string) error {
	if accessKey == "" || m.rules.Load().accounts[accessKey] == nil {
		return ErrNotFound
	}
	return m.rewrite(func(f *File) error {
		for i := range f.Accounts {
			if f.Accounts[i].AccessKey == accessKey {
				f.Accounts = append(f.Accounts[:i], f.Accounts[i+1:]...)
				return nil
			}
		}
		return ErrNotFound
	})
}

// UpdateGlobalWhiteAddrs replaces globalWhiteRemoteAddresses of the file at
// path, which must be the managed file (the stock broker takes any .yml
// under ROCKETMQ_HOME it reads). The addresses are checked before the file
// is written.
func (m *Manager) UpdateGlobalWhiteAddrs(addrs []string, path string) error {
	if path != "" && filepath.Clean(path) != m.path {
		return fmt.Errorf("acl: %s is not the broker's ACL file", path)
	}
	return m.rewrite(func(f *File) error {
		f.GlobalWhiteRemoteAddresses = addrs
		return nil
	})
}

// rewrite applies change to the file as it is on disk, bumps its version,
// checks that the result loads, and replaces the file atomically.
func (m *Manager) rewrite(change func(*File) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, err := os.ReadFile(m.path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("acl: %w", err)
	}
	f, err := parseFile(raw)
	if err != nil {
		return err
	}
	if err := change(&f); err != nil {
		return err
	}
	v := DataVersion{}
	if len(f.DataVersion) > 0 {
		v = f.DataVersion[0]
	}
	v.Counter++
	v.Timestamp = m.clock.Now().UnixMilli()
	f.DataVersion = []DataVersion{v}
	out, err := yaml.Marshal(&f)
	if err != nil {
		return fmt.Errorf("acl: %w", err)
	}
	if _, err := compile(f, v); err != nil {
		return err
	}
	if err := writeAtomic(m.path, out); err != nil {
		return fmt.Errorf("acl: %w", err)
	}
	return m.install(out)
}

func javaStrPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}
