package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Config is AuthConfig's keys as the broker reads them from broker.conf.
type Config struct {
	// FS is the file system auth.json is written through (nil: the OS's;
	// store.Options.FS, for fault injection in tests).
	FS store.FS

	AuthenticationEnabled bool
	AuthorizationEnabled  bool
	// The provider keys name Java classes. rmq has one implementation of
	// each: the providers accept "" or the stock Default*Provider names;
	// the metadata providers must be set (to anything, the stock Local*
	// names included) for users and ACLs to be kept, as a broker without
	// one has no store.
	AuthenticationProvider         string
	AuthorizationProvider          string
	AuthenticationMetadataProvider string
	AuthorizationMetadataProvider  string
	// Whitelists are comma lists of rpcCodes that skip the check: request
	// codes on remoting ("10"), message full names on gRPC
	// ("apache.rocketmq.v2.QueryRouteRequest").
	AuthenticationWhitelist string
	AuthorizationWhitelist  string
	// InitAuthenticationUser is {"username":..,"password":..}, created as a
	// super user when absent; InnerClientAuthenticationCredentials is
	// {"accessKey":..,"secretKey":..}, likewise.
	InitAuthenticationUser               string
	InnerClientAuthenticationCredentials string
	MigrateAuthFromV1Enabled             bool
	// ClusterName is brokerClusterName: the resource of cluster actions.
	ClusterName string
}

// Enabled reports whether either check is on or a metadata store is
// configured (codes 3001-3010 are served whenever a store is).
func (c Config) Enabled() bool {
	return c.AuthenticationEnabled || c.AuthorizationEnabled || c.AuthenticationMetadataProvider != "" || c.AuthorizationMetadataProvider != ""
}

// Service is ACL 2.0 of one broker.
type Service struct {
	cfg     Config
	md      *Metadata
	authnWL map[string]bool
	authzWL map[string]bool
}

// Open starts the service: the metadata under configDir
// (<storePathRootDir>/config), the init and inner users created, the
// v1 migration run from v1Files when asked. It fails as the stock broker
// fails to start: no metadata provider with an init user, or checks on
// without the store they read.
func Open(cfg Config, configDir string, v1Files []string) (*Service, error) {
	for _, p := range []struct{ v, def string }{
		{cfg.AuthenticationProvider, "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider"},
		{cfg.AuthorizationProvider, "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider"},
	} {
		if p.v != "" && p.v != p.def {
			return nil, fmt.Errorf("auth: provider %s is not supported; rmq implements %s", p.v, p.def)
		}
	}
	if cfg.AuthenticationMetadataProvider == "" && (cfg.AuthenticationEnabled || cfg.InitAuthenticationUser != "" || cfg.InnerClientAuthenticationCredentials != "") {
		return nil, errors.New("Init authentication user error: The authenticationMetadataProvider is not configured")
	}
	if cfg.AuthorizationMetadataProvider == "" && cfg.AuthorizationEnabled {
		return nil, errors.New("The authorizationMetadataProvider is not configured")
	}
	md, err := OpenMetadata(cfg.FS, filepath.Join(configDir, FileName))
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, md: md, authnWL: whitelist(cfg.AuthenticationWhitelist), authzWL: whitelist(cfg.AuthorizationWhitelist)}
	if cfg.InitAuthenticationUser != "" {
		var u struct{ Username, Password string }
		if err := json.Unmarshal([]byte(cfg.InitAuthenticationUser), &u); err != nil {
			return nil, fmt.Errorf("auth: initAuthenticationUser: %w", err)
		}
		if err := s.ensureSuper(u.Username, u.Password); err != nil {
			return nil, fmt.Errorf("Init authentication user error: %w", err)
		}
	}
	if cfg.InnerClientAuthenticationCredentials != "" {
		var c struct{ AccessKey, SecretKey string }
		if err := json.Unmarshal([]byte(cfg.InnerClientAuthenticationCredentials), &c); err != nil {
			return nil, fmt.Errorf("auth: innerClientAuthenticationCredentials: %w", err)
		}
		if err := s.ensureSuper(c.AccessKey, c.SecretKey); err != nil {
			return nil, fmt.Errorf("auth: inner client user: %w", err)
		}
	}
	if cfg.MigrateAuthFromV1Enabled {
		if err := Migrate(md, v1Files); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ensureSuper creates name as a super user unless it exists
// (AuthenticationMetadataManagerImpl.initUser).
func (s *Service) ensureSuper(name, password string) error {
	if _, ok := s.md.User(name); ok {
		return nil
	}
	return s.md.CreateUser(User{Username: name, Password: password, UserType: UserSuper})
}

func whitelist(s string) map[string]bool {
	out := map[string]bool{}
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out[c] = true
		}
	}
	return out
}

// Metadata is the service's users and ACLs.
func (s *Service) Metadata() *Metadata { return s.md }

// Config is the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// Check is the broker's pipeline for one remoting request from remote
// ("ip:port"): authentication, then authorization; nil lets it through.
func (s *Service) Check(remote string, req *remoting.Command) error {
	rpc := strconv.Itoa(int(req.Code))
	cred := RemotingCredential(req)
	if s.cfg.AuthenticationEnabled && !s.authnWL[rpc] {
		if err := s.md.authenticate(cred); err != nil {
			return err
		}
	}
	if !s.cfg.AuthorizationEnabled || s.authzWL[rpc] {
		return nil
	}
	reqs, err := Requests(req, s.cfg.ClusterName, sourceIP(remote))
	if err != nil {
		return err
	}
	return s.authorize(cred.Username, hasAccessKey(req), reqs)
}

func hasAccessKey(req *remoting.Command) bool {
	_, ok := req.Ext()["AccessKey"]
	return ok
}

// CheckGrpc is the proxy's pipeline for one gRPC message (its full name
// rpc) from remote, with the authorization and x-mq-date-time values and
// the resources it needs (the caller derives them as
// DefaultAuthorizationContextBuilder does for gRPC; a derivation error is
// passed as needErr, reported after authentication as stock).
func (s *Service) CheckGrpc(remote, rpc, authorization, dateTime string, need func(sourceIP string) ([]Request, error)) error {
	cred, err := GrpcCredential(authorization, dateTime)
	if s.cfg.AuthenticationEnabled && !s.authnWL[rpc] {
		if err != nil {
			return err
		}
		if err := s.md.authenticate(cred); err != nil {
			return err
		}
	}
	if !s.cfg.AuthorizationEnabled || s.authzWL[rpc] {
		return nil
	}
	if err != nil {
		return err
	}
	reqs, err := need(sourceIP(remote))
	if err != nil {
		return err
	}
	return s.authorize(cred.Username, cred.Username != "", reqs)
}

// authorize is UserAuthorizationHandler then AclAuthorizationHandler for
// each context: no subject is refused; a super user passes; a normal
// user's ACL decides.
func (s *Service) authorize(username string, hasSubject bool, reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	if !hasSubject {
		// The Java dereferences the null subject; doEvaluate answers the
		// exception so.
		return &Denied{Msg: "Authorization failed. Please verify your access rights and try again."}
	}
	subject := subjectPrefix + username
	u, ok := s.md.User(username)
	if !ok {
		return denyf("User:%s not found.", username)
	}
	if u.UserType == UserSuper {
		return nil
	}
	a, ok := s.md.Acl(subject)
	var ap *Acl
	if ok {
		ap = &a
	}
	for _, r := range reqs {
		if err := decide(subject, ap, r); err != nil {
			return err
		}
	}
	return nil
}

// sourceIP is the address part of "ip:port" (substringBeforeLast ':').
func sourceIP(remote string) string {
	if i := strings.LastIndexByte(remote, ':'); i >= 0 {
		return strings.Trim(remote[:i], "[]")
	}
	return remote
}

// v1Files is where the stock migration reads plain_acl.yml files:
// $ROCKETMQ_HOME/conf/plain_acl.yml (or file when set) and every *.yml /
// *.yaml under conf/acl.
func V1Files(home, file string) []string {
	var out []string
	if file == "" && home != "" {
		file = filepath.Join(home, "conf", "plain_acl.yml")
	}
	if file != "" {
		out = append(out, file)
	}
	if home != "" {
		dir := filepath.Join(home, "conf", "acl")
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				n := e.Name()
				if !e.IsDir() && (strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".yaml")) {
					out = append(out, filepath.Join(dir, n))
				}
			}
		}
	}
	return out
}

// Checks reports whether s checks requests (nil: no).
func (s *Service) Checks() bool {
	return s != nil && (s.cfg.AuthenticationEnabled || s.cfg.AuthorizationEnabled)
}
