package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is one CA and the two certificates it signed, as PEM files: a server certificate for
// the loopback addresses (every TLS listener of a test) and a client certificate.
type testPKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// newPKI writes a fresh CA and its server and client certificates (ECDSA P-256) into dir.
func newPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	ca, caKey := issue(t, dir, "ca", &x509.Certificate{IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	issue(t, dir, "server", &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"}}, ca, caKey)
	issue(t, dir, "client", &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	f := func(name string) string { return filepath.Join(dir, name) }
	return testPKI{CA: f("ca.crt"), ServerCert: f("server.crt"), ServerKey: f("server.key"),
		ClientCert: f("client.crt"), ClientKey: f("client.key")}
}

// issue completes tmpl (serial, name, a day's validity), signs it with parent (tmpl itself when
// nil), writes dir/name.crt and dir/name.key, and returns the certificate and its key.
func issue(
	t *testing.T,
	dir, name string,
	tmpl, parent *x509.Certificate,
	parentKey *ecdsa.PrivateKey,
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
	tmpl.SerialNumber, tmpl.Subject = serial, pkix.Name{CommonName: "switchyard e2e " + name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
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

// Client returns an HTTP client that trusts the CA, over HTTP/2 by ALPN, presenting the client
// certificate when withCert.
func (p testPKI) Client(t *testing.T, withCert bool) *http.Client {
	t.Helper()
	pemCA, err := os.ReadFile(p.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if withCert {
		pair, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true},
		Timeout:   30 * time.Second,
	}
}
