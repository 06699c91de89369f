package grpcapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// A configured certificate is the one served: a client that trusts only it
// and checks the name connects.
func TestConfiguredCertificate(t *testing.T) {
	cert, err := selfSigned(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServerWith(t, nil, func(o *Options) { o.TLSCertPath, o.TLSKeyPath = certPath, keyPath })
	ts.createTopic("CertTopic", 1)

	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	conn, err := grpc.NewClient(ts.endpoint(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost"})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	route, err := v2.NewMessagingServiceClient(conn).QueryRoute(callCtx(t), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "CertTopic"}})
	if err != nil || route.Status.Code != v2.Code_OK {
		t.Fatalf("QueryRoute over the configured certificate: %v %v", route, err)
	}

	// Only one of the two paths: refused at start.
	bad := DefaultOptions()
	bad.TLSCertPath = certPath
	if _, err := tlsConfig(bad, time.Now()); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}
