package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
)

// TestListenOverMutualTLS serves --listen over TLS with client certificates required, as routers
// reach a gateway across regions at an https:// advertise URL: a client with the CA and a client
// certificate streams a chat completion over HTTP/2 (and over HTTP/1.1); one without a certificate is
// refused, and so is plain HTTP.
func TestListenOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil, 0)
	newCert(t, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	newCert(t, dir, "router", ca, caKey, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	clientCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "router.crt"), filepath.Join(dir, "router.key"))
	if err != nil {
		t.Fatal(err)
	}
	client := func(certs []tls.Certificate, h2 bool) *http.Client {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: h2,
		}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	mtls := client([]tls.Certificate{clientCert}, true)
	g := startGatewayWith(
		t,
		2,
		mtls,
		"--tls-cert-file="+filepath.Join(dir, "server.crt"),
		"--tls-key-file="+filepath.Join(dir, "server.key"),
		"--tls-client-ca-file="+filepath.Join(dir, "ca.crt"),
	)

	for _, c := range []struct {
		name  string
		cl    *http.Client
		proto string
	}{{"HTTP/2", mtls, "HTTP/2.0"}, {"HTTP/1.1", client([]tls.Certificate{clientCert}, false), "HTTP/1.1"}} {
		resp, err := c.cl.Post(g.http+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"llama","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Proto != c.proto || !strings.Contains(string(body), "[DONE]") {
			t.Fatalf("%s: %s %d %s", c.name, resp.Proto, resp.StatusCode, body)
		}
	}
	if resp, err := client(nil, true).Get(g.http + "/v1/models"); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate was answered: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + g.HTTPAddr() + "/v1/models"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP on the TLS port answered %d", resp.StatusCode)
		}
	}
}

// newCert writes dir/name.crt and dir/name.key: a CA when parent is nil, else a leaf for usage
// (for 127.0.0.1) signed by parent.
func newCert(
	t *testing.T,
	dir, name string,
	parent *x509.Certificate,
	parentKey *ecdsa.PrivateKey,
	usage x509.ExtKeyUsage,
) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{name + ".crt": {Type: "CERTIFICATE", Bytes: der}, name + ".key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestExtProcSecureServing serves ext_proc over TLS as GIE's endpoint picker does with
// --secure-serving: with a self-signed certificate, which gateways take without verifying it, or
// with --cert-path's tls.crt and tls.key, which a client holding the CA verifies. A cleartext
// client is refused, and gRPC health answers on the same TLS port.
func TestExtProcSecureServing(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil, 0)
	certDir := filepath.Join(dir, "secret")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	newCert(t, certDir, "tls", ca, caKey, x509.ExtKeyUsageServerAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, tc := range []struct {
		name  string
		args  []string
		creds credentials.TransportCredentials
	}{
		{"self-signed, not verified", []string{"--secure-serving"},
			credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})}, //nolint:gosec // as gateways reach an endpoint picker
		{"--cert-path, verified", []string{"--secure-serving", "--cert-path=" + certDir},
			credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, 2, tc.args...)
			if err := extProcExchange(t, g, tc.creds); err != nil {
				t.Fatalf("ext_proc over TLS: %v", err)
			}
			conn, err := grpc.NewClient(g.ExtProcAddr(), grpc.WithTransportCredentials(tc.creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if resp, err := healthpb.NewHealthClient(conn).
				Check(ctx, &healthpb.HealthCheckRequest{}); err != nil ||
				resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health over TLS: %v, %v", resp, err)
			}
			if err := extProcExchange(t, g, insecure.NewCredentials()); err == nil {
				t.Fatal("a cleartext client was served on the TLS port")
			}
		})
	}
	// A --cert-path without the files fails at start, naming the flag.
	cfg, err := app.ParseConfig(
		[]string{
			"--cluster=c1",
			"--region=us-east-1",
			"--endpoints=127.0.0.1:1",
			"--listen=127.0.0.1:0",
			"--ext-proc-listen=127.0.0.1:0",
			"--metrics-listen=127.0.0.1:0",
			"--grpc-health-port=0",
			"--secure-serving",
			"--cert-path=" + dir,
		},
		func(string) string { return "" },
		io.Discard,
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.New(cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--cert-path") {
		t.Fatalf("New with a --cert-path holding no tls.crt: %v, want an error naming --cert-path", err)
	}
	// A client that verifies the self-signed certificate against a CA refuses it.
	g := startGateway(t, 1, "--secure-serving")
	if err := extProcExchange(
		t,
		g,
		credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
	); err == nil {
		t.Fatal("the self-signed certificate verified against an unrelated CA")
	}
}
