package broker

import (
	"errors"
	"os"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/remoting"
)

// ACL 2.0 (package auth) in the broker: the service when any of its keys
// asks for it, its check before dispatch (after the plain ACL's, where both
// are configured), and the codes 3001-3010.

// openAuth starts ACL 2.0 from opts, nil when none of its keys is set.
func openAuth(opts Options, configDir string) (*auth.Service, error) {
	cfg := auth.Config{
		AuthenticationEnabled:                opts.AuthenticationEnabled,
		AuthorizationEnabled:                 opts.AuthorizationEnabled,
		AuthenticationProvider:               opts.AuthenticationProvider,
		AuthorizationProvider:                opts.AuthorizationProvider,
		AuthenticationMetadataProvider:       opts.AuthenticationMetadataProvider,
		AuthorizationMetadataProvider:        opts.AuthorizationMetadataProvider,
		AuthenticationWhitelist:              opts.AuthenticationWhitelist,
		AuthorizationWhitelist:               opts.AuthorizationWhitelist,
		InitAuthenticationUser:               opts.InitAuthenticationUser,
		InnerClientAuthenticationCredentials: opts.InnerClientAuthenticationCredentials,
		MigrateAuthFromV1Enabled:             opts.MigrateAuthFromV1Enabled,
		ClusterName:                          opts.BrokerClusterName,
		FS:                                   opts.FS,
	}
	if !cfg.Enabled() && cfg.InitAuthenticationUser == "" && cfg.InnerClientAuthenticationCredentials == "" && !cfg.MigrateAuthFromV1Enabled {
		return nil, nil
	}
	// The stock migration reads $ROCKETMQ_HOME/conf/plain_acl.yml (rmq:
	// aclFile first, as for the plain ACL) and conf/acl/*.yml.
	return auth.Open(cfg, configDir, auth.V1Files(os.Getenv("ROCKETMQ_HOME"), aclFilePath(opts)))
}

// checkAuth is the broker's authentication and authorization pipeline
// (BrokerController.initialRequestPipeline): a refusal is NO_PERMISSION
// with the stock message (no reply to a oneway request).
func (b *Broker) checkAuth(c *remoting.Conn, req *remoting.Command) (resp *remoting.Command, denied bool) {
	err := b.auth.Check(c.RemoteAddr(), req)
	if err == nil {
		return nil, false
	}
	var d *auth.Denied
	remark := err.Error()
	if errors.As(err, &d) {
		remark = d.Msg
	}
	b.refusals.Event(&b.log, zerolog.DebugLevel, "auth_denied", remoting.NoPermission).Str("remote", c.RemoteAddr()).
		Int32("requestCode", req.Code).Str("cause", remark).Msg("auth: request refused")
	if req.IsOneway() {
		return nil, true
	}
	return remoting.NewResponse(req, remoting.NoPermission, remark), true
}

// authProcessors are the handlers of 3001-3010, served whether or not
// ACL 2.0 runs (auth.Unconfigured).
func (b *Broker) authProcessors() map[int32]HandlerFunc {
	out := make(map[int32]HandlerFunc)
	hs := auth.Unconfigured()
	if b.auth != nil {
		hs = b.auth.Processors()
	}
	for code, h := range hs {
		out[code] = func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return h(req) }
	}
	return out
}

// Auth is the broker's ACL 2.0, nil when not configured; the gRPC
// endpoint checks its calls with it.
func (b *Broker) Auth() *auth.Service { return b.auth }
