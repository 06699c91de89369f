package acl

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/rmqio/rmq/internal/javastr"
)

// File is plain_acl.yml.
type File struct {
	GlobalWhiteRemoteAddresses []string      `yaml:"globalWhiteRemoteAddresses,omitempty"`
	Accounts                   []Account     `yaml:"accounts,omitempty"`
	DataVersion                []DataVersion `yaml:"dataVersion,omitempty"`
}

// Account is one entry of accounts (PlainAccessConfig).
type Account struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress,omitempty"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `yaml:"topicPerms,omitempty"`
	GroupPerms         []string `yaml:"groupPerms,omitempty"`
}

// DataVersion is the file's version: its first dataVersion entry, bumped
// (counter+1, timestamp now) by every change made through the broker.
type DataVersion struct {
	Counter   int64 `yaml:"counter" json:"counter"`
	Timestamp int64 `yaml:"timestamp" json:"timestamp"`
}

// minKeyLen: an AccessKey and a SecretKey must be longer than this
// (AclConstants.ACCESS_KEY_MIN_LENGTH, SECRET_KEY_MIN_LENGTH).
const minKeyLen = 6

// account is an Account ready for checks (PlainAccessResource).
type account struct {
	accessKey, secretKey string
	admin                bool
	white                addressMatcher
	defTopic, defGroup   byte
	perms                map[string]byte // topics, and groups as retry topics; nil when none
}

// rules is one loaded file.
type rules struct {
	global   []addressMatcher
	accounts map[string]*account
	version  DataVersion
	raw      []byte // the managed file
	extraSig []byte // the extra files (extrasSignature)
}

func parseFile(raw []byte) (File, error) {
	var f File
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("acl: %w", err)
	}
	return f, nil
}

// compile checks a file as PlainPermissionManager.load does and builds
// its rules. version is used when the file has no dataVersion.
func compile(f File, version DataVersion) (*rules, error) {
	r := &rules{accounts: make(map[string]*account, len(f.Accounts)), version: version}
	if len(f.DataVersion) > 0 {
		r.version = f.DataVersion[0]
	}
	for _, p := range f.GlobalWhiteRemoteAddresses {
		m, err := parseAddress(p)
		if err != nil {
			return nil, err
		}
		r.global = append(r.global, m)
	}
	for _, a := range f.Accounts {
		if len(a.AccessKey) <= minKeyLen || len(a.SecretKey) <= minKeyLen {
			return nil, fmt.Errorf("The accessKey=%s and secretKey=%s cannot be null and length should longer than 6", a.AccessKey, a.SecretKey)
		}
		acc := &account{
			accessKey: a.AccessKey, secretKey: a.SecretKey, admin: a.Admin,
			defTopic: ParsePerm(a.DefaultTopicPerm), defGroup: ParsePerm(a.DefaultGroupPerm),
		}
		for _, kind := range []struct {
			list  []string
			topic bool
		}{{a.GroupPerms, false}, {a.TopicPerms, true}} {
			for _, item := range kind.list {
				parts := splitNonEmpty(item, "=")
				if len(parts) != 2 {
					what := "group"
					if kind.topic {
						what = "topic"
					}
					return nil, fmt.Errorf("Parse resource permission failed for %s:%s", what, item)
				}
				if acc.perms == nil {
					acc.perms = make(map[string]byte)
				}
				res := javastr.Trim(parts[0])
				if !kind.topic {
					res = retryPrefix + res
				}
				acc.perms[res] = ParsePerm(parts[1])
			}
		}
		m, err := parseAddress(a.WhiteRemoteAddress)
		if err != nil {
			return nil, err
		}
		acc.white = m
		// An AccessKey listed twice: the first entry counts (the stock
		// keeps the first file's; within one file fastjson's list order).
		if _, dup := r.accounts[a.AccessKey]; !dup {
			r.accounts[a.AccessKey] = acc
		}
	}
	return r, nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, renamed over it, the directory synced.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ParseFile reads a plain_acl.yml (the ACL 2.0 migration, package auth,
// reads the accounts the same way this package does).
func ParseFile(raw []byte) (File, error) { return parseFile(raw) }
