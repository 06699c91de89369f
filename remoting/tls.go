package remoting

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqio/rmq/third_party/gnet"

	"github.com/rmqio/rmq/conf"
)

// TLS on the remoting port, as the Java NettyRemotingServer offers it
// (TlsSystemConfig, TlsHelper, HandshakeHandler). gnet has no TLS, so a
// connection whose first byte is 0x16 (a TLS handshake record) leaves the
// frame decoder of the event loop: the loop hands the ciphertext it reads to
// a goroutine of that connection, which runs crypto/tls over it and decodes
// and dispatches the frames; answers are encrypted on the writer's goroutine
// and queued as bytes like a plaintext connection's frames. Plaintext
// connections take the event-loop path unchanged: one byte is peeked at their
// first read, and nothing is copied.

// TLSMode is the server's TLS mode (stock TlsMode).
type TLSMode int

const (
	// TLSDisabled refuses TLS: a handshake is taken for a broken frame and
	// the connection closed.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plaintext connections on the same port.
	TLSPermissive
	// TLSEnforcing closes plaintext connections.
	TLSEnforcing
)

// tlsHandshakeByte starts every TLS connection (record type handshake).
const tlsHandshakeByte = 0x16

// tlsBacklogMax bounds the ciphertext a TLS connection's goroutine has not
// decrypted yet; past it the connection is closed. It holds two largest
// frames: the goroutine only decrypts and hands frames to the pool, so it
// falls behind only when starved.
const tlsBacklogMax = 2 * MaxFrameSize

// tlsFrameStart is the first buffer of a TLS connection's frame; it doubles
// as the frame arrives. (The partial frames of TLS connections are not
// charged to MaxInflightBytes: they are bounded per connection by the
// backlog and by what has arrived.)
const tlsFrameStart = 64 << 10

// ParseTLSMode reads "disabled", "permissive" or "enforcing" (any case).
// The empty string (a zero ServerConfig) is disabled. Where TlsMode.parse
// takes any other word for permissive, this is an error.
func ParseTLSMode(s string) (TLSMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "disabled":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return 0, fmt.Errorf("unknown TLS mode %q (disabled, permissive or enforcing)", s)
}

func (m TLSMode) String() string {
	switch m {
	case TLSDisabled:
		return "disabled"
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return fmt.Sprintf("TLSMode(%d)", int(m))
}

// TLSConfig is the server side of the stock TLS settings, under the stock
// keys. They are read from broker.conf / namesrv.conf and then, as TlsHelper
// does, from the properties file TLSConfigFile when it exists, whose values
// win. Encrypted private keys (tls.server.keyPassword) are not supported.
type TLSConfig struct {
	// TLSServerMode is disabled, permissive or enforcing (stock key
	// tls.server.mode, default permissive).
	TLSServerMode string `conf:"tls.server.mode"`
	// TLSConfigFile is a properties file with the keys below; a missing
	// file is skipped.
	TLSConfigFile string `conf:"tls.config.file"`
	// TLSTestModeEnable is accepted for the stock key; rmq generates a
	// self-signed certificate whenever no certificate is configured, and
	// uses a configured one even in test mode.
	TLSTestModeEnable bool `conf:"tls.test.mode.enable"`
	// TLSServerCertPath and TLSServerKeyPath are PEM files of the server's
	// certificate chain and its unencrypted private key.
	TLSServerCertPath string `conf:"tls.server.certPath"`
	TLSServerKeyPath  string `conf:"tls.server.keyPath"`
	// TLSServerNeedClientAuth is none, optional or require.
	TLSServerNeedClientAuth string `conf:"tls.server.need.client.auth"`
	// TLSServerAuthClient verifies a client's certificate against
	// TLSServerTrustCertPath (PEM); false accepts any client certificate.
	TLSServerAuthClient    bool   `conf:"tls.server.authClient"`
	TLSServerTrustCertPath string `conf:"tls.server.trustCertPath"`
	// TLSEnable makes the broker speak TLS to the name server (stock
	// tls.enable, which the stock broker's outer API reads), trusting any
	// name server certificate.
	TLSEnable bool `conf:"tls.enable"`
}

// ClientTLS is the configuration of this process's own client connections
// (ClientTLS when TLSEnable, else nil).
func (c TLSConfig) ClientTLS() *tls.Config {
	if !c.TLSEnable {
		return nil
	}
	return ClientTLS()
}

// DefaultTLSConfig returns the stock defaults.
func DefaultTLSConfig() TLSConfig {
	return TLSConfig{
		TLSServerMode:           "permissive",
		TLSConfigFile:           "/etc/rocketmq/tls.properties",
		TLSTestModeEnable:       true,
		TLSServerNeedClientAuth: "none",
	}
}

// Build reads TLSConfigFile (when it exists) over c and returns the mode and
// the crypto/tls configuration (nil when disabled). A self-signed certificate
// is generated when none is configured. The file's unknown keys (the
// tls.client.* ones among them) are ignored, as TlsHelper ignores them.
func (c *TLSConfig) Build() (TLSMode, *tls.Config, error) {
	if c.TLSConfigFile != "" {
		if fi, err := os.Stat(c.TLSConfigFile); err == nil && fi.Mode().IsRegular() {
			mode := c.TLSServerMode // the file does not set the mode (stock)
			if _, err := conf.LoadFile(c.TLSConfigFile, c); err != nil {
				return 0, nil, fmt.Errorf("tls.config.file: %w", err)
			}
			c.TLSServerMode = mode
		}
	}
	mode, err := ParseTLSMode(c.TLSServerMode)
	if err != nil {
		return 0, nil, fmt.Errorf("tls.server.mode: %w", err)
	}
	if mode == TLSDisabled {
		return mode, nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case c.TLSServerCertPath != "" || c.TLSServerKeyPath != "":
		cert, err := tls.LoadX509KeyPair(c.TLSServerCertPath, c.TLSServerKeyPath)
		if err != nil {
			return 0, nil, fmt.Errorf("tls.server.certPath/keyPath: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	default:
		cert, err := SelfSignedCertificate()
		if err != nil {
			return 0, nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	var pool *x509.CertPool
	if c.TLSServerAuthClient && c.TLSServerTrustCertPath != "" {
		pem, err := os.ReadFile(c.TLSServerTrustCertPath)
		if err != nil {
			return 0, nil, fmt.Errorf("tls.server.trustCertPath: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return 0, nil, fmt.Errorf("tls.server.trustCertPath %s: no PEM certificate", c.TLSServerTrustCertPath)
		}
		cfg.ClientCAs = pool
	}
	verify := c.TLSServerAuthClient
	switch strings.ToLower(strings.TrimSpace(c.TLSServerNeedClientAuth)) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "optional":
		cfg.ClientAuth = tls.RequestClientCert
		if verify {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	case "require":
		cfg.ClientAuth = tls.RequireAnyClientCert
		if verify {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	default:
		return 0, nil, fmt.Errorf("tls.server.need.client.auth %q is not none, optional or require", c.TLSServerNeedClientAuth)
	}
	return mode, cfg, nil
}

// SelfSignedCertificate makes an ECDSA P-256 certificate for localhost and
// 127.0.0.1, valid for a year, as netty's SelfSignedCertificate does for the
// stock broker in test mode.
func SelfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("remoting: self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// sniff decides, at a connection's first byte, whether it speaks TLS; it
// returns gnet.Close for plaintext in enforcing mode.
func (s *Server) sniff(c *Conn, gc gnet.Conn) gnet.Action {
	b, _ := gc.Peek(1)
	if len(b) == 0 {
		return gnet.None
	}
	c.sniffed = true
	if b[0] != tlsHandshakeByte {
		if s.opts.TLSMode == TLSEnforcing {
			s.refusals.Warn(&s.log, "tls_plaintext_refused", 0).Str("remote", c.remote).Msg("closing connection: plaintext while tls.server.mode is enforcing")
			return gnet.Close
		}
		return gnet.None
	}
	p := &tlsPipe{c: c}
	p.cond.L = &p.mu
	c.pipe = p
	tc := tls.Server(p, s.opts.TLS)
	c.tc.Store(tc)
	go s.serveTLS(c, tc)
	return gnet.None
}

// feedTLS hands every byte read to the connection's TLS goroutine.
func (s *Server) feedTLS(c *Conn, gc gnet.Conn) gnet.Action {
	n := gc.InboundBuffered()
	if n == 0 {
		return gnet.None
	}
	b, _ := gc.Next(n)
	if !c.pipe.feed(b) {
		s.refusals.Warn(&s.log, "tls_backlog", 0).Str("remote", c.remote).Int("backlog", tlsBacklogMax).Msg("closing connection: TLS backlog not decrypted")
		return gnet.Close
	}
	return gnet.None
}

// serveTLS runs the handshake, then decodes and dispatches the frames of a
// TLS connection until it breaks or closes.
func (s *Server) serveTLS(c *Conn, tc *tls.Conn) {
	// A handshake that never ends is ended by the idle timeout (no frame
	// arrives), which closes the connection and so the pipe.
	if err := tc.Handshake(); err != nil {
		if !c.Closed() {
			s.refusals.Warn(&s.log, "tls_handshake_failed", 0).Err(err).Str("remote", c.remote).Msg("closing connection: TLS handshake failed")
			c.Close()
		}
		return
	}
	r := bufio.NewReaderSize(tc, 64<<10)
	var prefix [4]byte
	for {
		cmd, err := s.readTLSFrame(r, prefix[:])
		if err != nil {
			if !c.Closed() && !errors.Is(err, io.EOF) {
				s.refusals.Warn(&s.log, "broken_tls_frame", 0).Err(err).Str("remote", c.remote).Msg("closing connection: broken TLS frame")
			}
			c.Close()
			return
		}
		c.lastFrame.Store(s.now.Load())
		s.dispatch(c, cmd)
	}
}

func (s *Server) readTLSFrame(r io.Reader, prefix []byte) (*Command, error) {
	if _, err := io.ReadFull(r, prefix); err != nil {
		return nil, err
	}
	n, err := FrameLength(prefix)
	if err != nil {
		return nil, err
	}
	// The buffer grows with what arrives, not with the length announced,
	// so a peer that announces 16 MiB and stalls holds what it sent.
	frame := make([]byte, 0, min(n, tlsFrameStart))
	for len(frame) < n {
		if len(frame) == cap(frame) {
			frame = slices.Grow(frame, min(n-len(frame), cap(frame)))
		}
		m, err := r.Read(frame[len(frame):min(n, cap(frame))])
		frame = frame[:len(frame)+m]
		if err != nil && len(frame) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return decodeFrame(frame, s.rawExt, true)
}

// tlsPipe is the net.Conn under a server-side tls.Conn: reads take the
// ciphertext the event loop fed, writes queue ciphertext on the connection
// like a plaintext frame.
type tlsPipe struct {
	c      *Conn
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	closed bool
}

// feed appends b (the loop's bytes, copied); false means the backlog is full.
func (p *tlsPipe) feed(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf)+len(b) > tlsBacklogMax {
		return false
	}
	p.buf = append(p.buf, b...)
	p.cond.Signal()
	return true
}

func (p *tlsPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *tlsPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.closed {
		p.cond.Wait()
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	if len(p.buf) == 0 {
		p.buf = nil
	}
	return n, nil
}

func (p *tlsPipe) Write(b []byte) (int, error) {
	if err := p.c.writeBytes(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (p *tlsPipe) Close() error {
	p.c.Close()
	return nil
}

func (p *tlsPipe) LocalAddr() net.Addr              { return p.c.gc.LocalAddr() }
func (p *tlsPipe) RemoteAddr() net.Addr             { return p.c.gc.RemoteAddr() }
func (p *tlsPipe) SetDeadline(time.Time) error      { return nil }
func (p *tlsPipe) SetReadDeadline(time.Time) error  { return nil }
func (p *tlsPipe) SetWriteDeadline(time.Time) error { return nil }
