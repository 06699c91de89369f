package grpcapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// tlsConfig loads the configured certificate, or makes a self-signed one.
// HTTP/2 is negotiated by ALPN (gRPC clients require it); no client
// certificate is asked for.
func tlsConfig(o Options, now time.Time) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case o.TLSCertPath != "" || o.TLSKeyPath != "":
		if o.TLSCertPath == "" || o.TLSKeyPath == "" {
			return nil, fmt.Errorf("grpcapi: grpcTlsCertPath and grpcTlsKeyPath go together")
		}
		cert, err = tls.LoadX509KeyPair(o.TLSCertPath, o.TLSKeyPath)
	default:
		cert, err = selfSigned(now)
	}
	if err != nil {
		return nil, fmt.Errorf("grpcapi: TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, nil
}

// selfSigned makes an ECDSA P-256 certificate for localhost, valid for a
// year from now.
func selfSigned(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"rmq"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
