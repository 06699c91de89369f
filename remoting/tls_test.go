package remoting

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

// tlsServer starts a testHandler server built from cfg, as the name server
// and the broker build theirs (ServerConfig.Validate, Apply).
func tlsServer(t *testing.T, h Handler, cfg ServerConfig) *Server {
	t.Helper()
	cfg.TLSConfigFile = "" // never /etc/rocketmq/tls.properties of this machine
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var so ServerOptions
	cfg.Apply(&so)
	return startServer(t, h, so)
}

func tlsCfg(mode string) ServerConfig {
	c := DefaultServerConfig()
	c.TLSServerMode = mode
	return c
}

// echo invokes codeEcho with body over cl and checks the answer.
func echo(t *testing.T, cl *Client, addr string, body []byte) error {
	t.Helper()
	resp, err := cl.InvokeTimeout(addr, NewRequest(codeEcho, map[string]string{"k": "v"}, body), ioWait)
	if err != nil {
		return err
	}
	if resp.Code != Success || resp.ExtFields["k"] != "v" || !bytes.Equal(resp.Body, body) {
		t.Fatalf("echo answered code %d ext %v body %d bytes, want the request back", resp.Code, resp.ExtFields, len(resp.Body))
	}
	return nil
}

func newTLSClient(t *testing.T, cfg *tls.Config) *Client {
	cl := NewClient(ClientOptions{TLS: cfg})
	t.Cleanup(cl.Close)
	return cl
}

func TestTLSPermissiveServesBoth(t *testing.T) {
	h := newTestHandler()
	s := tlsServer(t, h, tlsCfg("permissive"))
	addr := s.opts.Addrs[0]
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: many TLS records
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{{"tls", ClientTLS()}, {"plaintext", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newTLSClient(t, tc.cfg)
			// Pipelined requests on one connection, small and large.
			testutil.Concurrently(t, 32, func(i int) error {
				body := []byte(strings.Repeat("x", i))
				if i%8 == 0 {
					body = big
				}
				return echo(t, cl, addr, body)
			})
		})
	}
	// An answer written later from another goroutine (long polling) and a
	// server-initiated request reach a TLS client too.
	got := make(chan *Command, 1)
	cl := NewClient(ClientOptions{TLS: ClientTLS(), OnRequest: func(_ string, req *Command) *Command {
		got <- req
		return NewResponse(req, Success, "pong")
	}})
	t.Cleanup(cl.Close)
	done := make(chan error, 1)
	go func() {
		resp, err := cl.InvokeTimeout(addr, NewRequest(codeHold, nil, []byte("later")), ioWait)
		if err == nil && string(resp.Body) != "held" {
			t.Errorf("held answer body %q", resp.Body)
		}
		done <- err
	}()
	hr := recv(t, h.held, "held request")
	pong, err := hr.conn.Invoke(t.Context(), NewRequest(codeEcho, nil, []byte("ping")))
	if err != nil || pong.Remark != "pong" {
		t.Fatalf("server-initiated request over TLS: %v %+v", err, pong)
	}
	if req := recv(t, got, "server request"); string(req.Body) != "ping" {
		t.Fatalf("client got %q", req.Body)
	}
	resp := NewResponse(hr.req, Success, "")
	resp.Body = []byte("held")
	if err := hr.conn.WriteResponse(resp); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done, "held answer"); err != nil {
		t.Fatal(err)
	}
}

func TestTLSEnforcingRefusesPlaintext(t *testing.T) {
	s := tlsServer(t, newTestHandler(), tlsCfg("enforcing"))
	addr := s.opts.Addrs[0]
	raw := dialRaw(t, addr)
	raw.send(NewRequest(codeEcho, nil, nil))
	raw.expectClosed()
	if err := echo(t, newTLSClient(t, nil), addr, nil); err == nil {
		t.Fatal("plaintext request answered in enforcing mode")
	}
	if err := echo(t, newTLSClient(t, ClientTLS()), addr, []byte("ok")); err != nil {
		t.Fatalf("TLS in enforcing mode: %v", err)
	}
}

func TestTLSDisabledRefusesTLS(t *testing.T) {
	cfg := tlsCfg("disabled")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.tls != nil {
		t.Fatal("disabled mode built a TLS configuration")
	}
	s := tlsServer(t, newTestHandler(), cfg)
	addr := s.opts.Addrs[0]
	if err := echo(t, newTLSClient(t, ClientTLS()), addr, nil); err == nil {
		t.Fatal("TLS request answered in disabled mode")
	}
	if err := echo(t, newTLSClient(t, nil), addr, []byte("ok")); err != nil {
		t.Fatalf("plaintext in disabled mode: %v", err)
	}
}

// writePEM writes c's certificate and key as PEM files into dir.
func writePEM(t *testing.T, dir, name string, c tls.Certificate) (certPath, keyPath string) {
	t.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

func mustCert(t *testing.T) tls.Certificate {
	t.Helper()
	c, err := SelfSignedCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTLSClientCertificate(t *testing.T) {
	dir := t.TempDir()
	trusted, stranger := mustCert(t), mustCert(t)
	trustPath, _ := writePEM(t, dir, "trusted", trusted)
	withCert := func(c tls.Certificate) *tls.Config {
		cfg := ClientTLS()
		cfg.Certificates = []tls.Certificate{c}
		return cfg
	}
	for _, tc := range []struct {
		need, authClient string
		none, stranger   bool // whether a client without a certificate, with an untrusted one, is served
	}{
		{"require", "true", false, false},
		{"require", "false", false, true},
		{"optional", "true", true, false},
		{"none", "true", true, true},
	} {
		t.Run(tc.need+"/authClient="+tc.authClient, func(t *testing.T) {
			cfg := DefaultServerConfig()
			_, err := conf.Load(strings.NewReader("tls.server.mode=enforcing\n"+
				"tls.server.need.client.auth="+tc.need+"\n"+
				"tls.server.authClient="+tc.authClient+"\n"+
				"tls.server.trustCertPath="+trustPath+"\n"), "broker.conf", &cfg)
			if err != nil {
				t.Fatal(err)
			}
			addr := tlsServer(t, newTestHandler(), cfg).opts.Addrs[0]
			if err := echo(t, newTLSClient(t, withCert(trusted)), addr, []byte("a")); err != nil {
				t.Fatalf("trusted client certificate refused: %v", err)
			}
			check := func(what string, cl *Client, want bool) {
				err := echo(t, cl, addr, []byte("b"))
				if want && err != nil {
					t.Fatalf("%s refused: %v", what, err)
				}
				if !want && err == nil {
					t.Fatalf("%s served", what)
				}
			}
			check("client without certificate", newTLSClient(t, ClientTLS()), tc.none)
			check("untrusted client certificate", newTLSClient(t, withCert(stranger)), tc.stranger)
		})
	}
}

// The server certificate comes from tls.server.certPath/keyPath, read from
// the tls.config.file properties file over broker.conf's values; without
// one a self-signed certificate is made.
func TestTLSConfigFileAndCertificate(t *testing.T) {
	dir := t.TempDir()
	cert := mustCert(t)
	certPath, keyPath := writePEM(t, dir, "server", cert)
	props := filepath.Join(dir, "tls.properties")
	body := "tls.server.certPath=" + certPath + "\ntls.server.keyPath=" + keyPath +
		"\ntls.server.mode=disabled\ntls.client.authServer=false\n"
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultServerConfig()
	cfg.TLSServerMode = "enforcing"
	cfg.TLSServerCertPath = "/nonexistent.pem"
	cfg.TLSConfigFile = props
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if cfg.tlsMode != TLSEnforcing {
		t.Fatalf("mode %v: the file must not set tls.server.mode (stock reads it from the system property only)", cfg.tlsMode)
	}
	var so ServerOptions
	cfg.Apply(&so)
	addr := startServer(t, newTestHandler(), so).opts.Addrs[0]
	peer := func() []byte {
		conn, err := tls.DialWithDialer(&netDialer, "tcp", addr, ClientTLS())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	if !bytes.Equal(peer(), cert.Certificate[0]) {
		t.Fatal("server did not present the configured certificate")
	}

	// No certificate configured: a self-signed one for localhost.
	gen := tlsServer(t, newTestHandler(), tlsCfg("enforcing"))
	addr = gen.opts.Addrs[0]
	leaf, err := x509.ParseCertificate(peer())
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Fatalf("self-signed certificate: %v", err)
	}

	bad := tlsCfg("sometimes")
	bad.TLSConfigFile = ""
	if err := bad.Validate(); err == nil {
		t.Fatal("unknown tls.server.mode accepted")
	}
	if _, err := NewServer(newTestHandler(), ServerOptions{Addrs: []string{testutil.FreeAddr(t)}, TLSMode: TLSPermissive}); err == nil {
		t.Fatal("TLS mode without a configuration accepted")
	}
}

var netDialer = net.Dialer{Timeout: ioWait}

// A handshake that never completes holds no frame, so the idle timeout
// closes it like any silent connection.
func TestTLSStalledHandshakeIdles(t *testing.T) {
	m := clock.NewManual(time.Unix(1000, 0))
	armed := m.TimerCreated()
	cfg := tlsCfg("permissive")
	cfg.TLSConfigFile = ""
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	so := ServerOptions{Clock: m}
	cfg.Apply(&so)
	so.IdleTimeout = 120 * time.Second
	piped := make(chan struct{}, 1)
	s := startWith(t, newTestHandler(), so, func(s *Server) {
		s.trafficHook = func(c *Conn) {
			if c.pipe != nil {
				select {
				case piped <- struct{}{}:
				default:
				}
			}
		}
	})
	recv(t, armed, "the idle sweeper")
	raw := dialRaw(t, s.opts.Addrs[0])
	raw.write([]byte{tlsHandshakeByte, 3, 1}) // the start of a ClientHello record
	recv(t, piped, "the TLS connection")
	next := m.TimerCreated()
	m.Advance(121 * time.Second)
	recv(t, next, "an idle sweep")
	raw.expectClosed()
}

// A TLS connection that announces an oversized frame is closed, as a
// plaintext one is; the server goes on serving.
func TestTLSBadFrameCloses(t *testing.T) {
	addr := tlsServer(t, newTestHandler(), tlsCfg("enforcing")).opts.Addrs[0]
	conn, err := tls.DialWithDialer(&netDialer, "tcp", addr, ClientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0x7f, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(ioWait))
	var one [1]byte
	if n, err := conn.Read(one[:]); n > 0 || err == nil || isTimeout(err) {
		t.Fatalf("read after an oversized frame: %d bytes, %v; want the connection closed", n, err)
	}
	if err := echo(t, newTLSClient(t, ClientTLS()), addr, []byte("still")); err != nil {
		t.Fatal(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
