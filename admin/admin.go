package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// DefaultTimeout bounds one request when Options.Timeout is zero (mqadmin's
// timeoutMillis is 5 s).
const DefaultTimeout = 5 * time.Second

// Options configures an Admin.
type Options struct {
	// NamesrvAddr is the name server list, "host:port;host:port" (mqadmin -n).
	NamesrvAddr string
	// Timeout bounds each request (DefaultTimeout when zero).
	Timeout time.Duration
	// SerializeType of the request headers: remoting.SerializeJSON (the Java
	// default) or remoting.SerializeRocketMQ.
	SerializeType byte
	// BodyDir is where queryMsgById writes message bodies, as mqadmin writes
	// them to /tmp/rocketmq/msgbodys (default: <os temp dir>/rocketmq/msgbodys).
	BodyDir string
	// AccessKey and SecretKey sign every request as the Java client's
	// AclClientRPCHook does, for a broker with aclEnable=true (mqadmin
	// reads them from conf/tools.yml); no signing when AccessKey is empty.
	AccessKey, SecretKey string
	// Now is the clock of timestamps the commands compute (time.Now when nil).
	Now func() time.Time
	// TLS, when set, speaks TLS to name servers and brokers (--tls).
	TLS    *tls.Config
	Logger zerolog.Logger
}

// Admin speaks the remoting protocol to name servers and brokers the way the
// stock admin tools do. It is safe for concurrent use.
type Admin struct {
	opts    Options
	namesrv []string
	cli     *remoting.Client
	log     zerolog.Logger
}

// New returns an Admin; connections are dialled on first use.
func New(opts Options) *Admin {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BodyDir == "" {
		opts.BodyDir = filepath.Join(os.TempDir(), "rocketmq", "msgbodys")
	}
	return &Admin{
		opts:    opts,
		namesrv: SplitAddrs(opts.NamesrvAddr),
		cli:     remoting.NewClient(remoting.ClientOptions{SerializeType: opts.SerializeType, TLS: opts.TLS, Logger: opts.Logger}),
		log:     opts.Logger,
	}
}

// Close closes every connection.
func (a *Admin) Close() { a.cli.Close() }

// NamesrvAddrs returns the configured name server addresses.
func (a *Admin) NamesrvAddrs() []string { return append([]string(nil), a.namesrv...) }

// SplitAddrs splits a ';'-separated address list, dropping blanks.
func SplitAddrs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Roles name the peer in errors.
const (
	roleBroker  = "broker"
	roleNamesrv = "name server"
)

// invoke sends req to addr within the request timeout. Transport failures
// are wrapped with the peer; response codes are left to the caller.
func (a *Admin) invoke(ctx context.Context, role, addr string, req *remoting.Command) (*remoting.Command, error) {
	return a.invokeWithin(ctx, role, addr, req, a.opts.Timeout)
}

// invokeWithin is invoke with its own timeout, for a request the broker
// takes longer than usual to answer (CLOCK_FAST_FORWARD).
func (a *Admin) invokeWithin(ctx context.Context, role, addr string, req *remoting.Command, timeout time.Duration) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if a.opts.AccessKey != "" {
		acl.SignRequest(req, a.opts.AccessKey, a.opts.SecretKey, "")
	}
	resp, err := a.cli.Invoke(ctx, addr, req)
	if err != nil {
		return nil, &TransportError{Role: role, Addr: addr, Request: req.Code, Err: err}
	}
	return resp, nil
}

// call is invoke followed by a check that the response code is one of ok
// (SUCCESS when ok is empty).
func (a *Admin) call(ctx context.Context, role, addr string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	resp, err := a.invoke(ctx, role, addr, req)
	if err != nil {
		return nil, err
	}
	if len(ok) == 0 {
		ok = []int32{remoting.Success}
	}
	for _, c := range ok {
		if resp.Code == c {
			return resp, nil
		}
	}
	return nil, &ResponseError{Role: role, Addr: addr, Request: req.Code, Code: resp.Code, Remark: resp.Remark}
}

// callBroker is call to a broker.
func (a *Admin) callBroker(ctx context.Context, addr string, req *remoting.Command, ok ...int32) (*remoting.Command, error) {
	return a.call(ctx, roleBroker, addr, req, ok...)
}

// callNamesrv sends req to the name servers in order until one answers
// (transport errors move on to the next, like the Java client's sticky
// choice), then checks the response code as call does.
func (a *Admin) callNamesrv(ctx context.Context, req *remoting.Command, ok ...int32) (*remoting.Command, string, error) {
	if len(a.namesrv) == 0 {
		return nil, "", ErrNoNamesrv
	}
	var errs []error
	for _, addr := range a.namesrv {
		// Each attempt needs its own opaque: a late answer to the first must
		// not be taken for the answer to the second.
		r := *req
		r.Opaque = remoting.NextOpaque()
		resp, err := a.call(ctx, roleNamesrv, addr, &r, ok...)
		var te *TransportError
		if errors.As(err, &te) && ctx.Err() == nil {
			errs = append(errs, err)
			continue
		}
		return resp, addr, err
	}
	return nil, "", errors.Join(errs...)
}

// now is the injected clock.
func (a *Admin) now() time.Time { return a.opts.Now() }

// newRequest builds a request with string header fields.
func newRequest(code int32, ext map[string]string, body []byte) *remoting.Command {
	return remoting.NewRequest(code, ext, body)
}

// decodeBody parses a JSON body written by either fastjson or a standard
// encoder into v.
func decodeBody(role, addr string, code int32, body []byte, v any) error {
	if err := fastjson.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s %s answered %s with an unreadable body: %v", ErrBadBody, role, addr, RequestName(code), err)
	}
	return nil
}
