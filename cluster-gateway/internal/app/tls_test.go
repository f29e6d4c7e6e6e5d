package app_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	mtls := client([]tls.Certificate{clientCert}, true)
	g := startGatewayWith(t, 2, mtls, "--tls-cert-file="+filepath.Join(dir, "server.crt"), "--tls-key-file="+filepath.Join(dir, "server.key"),
		"--tls-client-ca-file="+filepath.Join(dir, "ca.crt"))

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
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
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
