package broker

import (
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/remoting"
)

// aclFilePath is where the broker's plain_acl.yml is: aclFile when set,
// else the stock place $ROCKETMQ_HOME/conf/plain_acl.yml, else
// <storePathRootDir>/config/plain_acl.yml.
func aclFilePath(opts Options) string {
	if opts.AclFile != "" {
		return opts.AclFile
	}
	if home := os.Getenv("ROCKETMQ_HOME"); home != "" {
		return filepath.Join(home, "conf", "plain_acl.yml")
	}
	return filepath.Join(opts.StorePathRootDir, "config", "plain_acl.yml")
}

// checkACL runs the ACL before dispatch (BrokerController.initialAcl's rpc
// hook): nil lets the request through; a refusal is the stock SYSTEM_ERROR
// with the AclException's description (no reply to a oneway request).
func (b *Broker) checkACL(c *remoting.Conn, req *remoting.Command) (resp *remoting.Command, denied bool) {
	err := b.acl.Check(c.RemoteAddr(), req)
	if err == nil {
		return nil, false
	}
	remark := err.Error()
	if d, ok := err.(*acl.Denied); ok {
		remark = d.Remark()
	}
	// Counted by the refusal limiter (a client with a wrong key retries
	// every request), at debug level as before.
	b.refusals.Event(&b.log, zerolog.DebugLevel, "acl_denied", remoting.SystemError).Str("remote", c.RemoteAddr()).
		Int32("requestCode", req.Code).Str("cause", err.Error()).Msg("acl: request refused")
	if req.IsOneway() {
		return nil, true
	}
	return remoting.NewResponse(req, remoting.SystemError, remark), true
}

// aclLoop reloads plain_acl.yml when its content changes, every
// acl.ReloadInterval of the broker clock (the stock AclFileWatchService).
func (b *Broker) aclLoop() {
	b.every(acl.ReloadInterval*time.Millisecond, func() {
		changed, err := b.acl.Reload()
		switch {
		case err != nil:
			b.log.Error().Err(err).Msg("acl: reload failed; the previous rules stay")
		case changed:
			b.log.Info().Str("file", b.acl.Path()).Msg("acl: reloaded")
		}
	})
}

func (b *Broker) aclProcessors() map[int32]HandlerFunc {
	out := make(map[int32]HandlerFunc)
	info := func() acl.BrokerInfo {
		return acl.BrokerInfo{ClusterName: b.opts.BrokerClusterName, BrokerName: b.opts.BrokerName, BrokerAddr: b.Addr()}
	}
	for code, h := range acl.Processors(b.acl, info, b.opts.AclConfigRequiresAdmin) {
		out[code] = h
	}
	return out
}

// ACL is the broker's plain ACL, nil when aclEnable is false; the gRPC
// endpoint checks its requests against the same rules.
func (b *Broker) ACL() *acl.Manager { return b.acl }
