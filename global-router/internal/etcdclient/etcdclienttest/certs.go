// Package etcdclienttest writes the TLS files that tests of etcd over TLS need: a CA, a server
// certificate for the loopback addresses signed by it, and a client certificate signed by it.
package etcdclienttest

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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files of one CA and the certificates it signed.
type Files struct {
	// CA is the CA's certificate.
	CA string
	// ServerCert and ServerKey are valid for 127.0.0.1, ::1 and localhost.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client certificate (common name "router").
	ClientCert, ClientKey string
}

// Write creates a CA and its server and client certificates in a new temporary directory of t.
func Write(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	f := Files{CA: filepath.Join(dir, "ca.crt")}
	ca, caKey := issue(t, dir, "ca", 1, nil, nil, nil)
	f.ServerCert, f.ServerKey = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	issue(t, dir, "server", 2, ca, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		c.IPAddresses, c.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"}
	})
	f.ClientCert, f.ClientKey = filepath.Join(dir, "router.crt"), filepath.Join(dir, "router.key")
	issue(t, dir, "router", 3, ca, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	return f
}

// issue writes dir/name.crt and dir/name.key: a CA when parent is nil, else a leaf signed by
// parent, with leaf adjusting its template. It returns the certificate and its key.
func issue(t testing.TB, dir, name string, serial int64, parent *x509.Certificate, parentKey *ecdsa.PrivateKey,
	leaf func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if parent == nil {
		tmpl.Subject.CommonName = "etcdclienttest CA"
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		parent, parentKey = tmpl, key
	} else {
		leaf(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// CAPool returns a pool holding the CA.
func (f Files) CAPool(t testing.TB) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", f.CA)
	}
	return pool
}

// Pair loads a certificate and its key, e.g. ServerCert and ServerKey.
func Pair(t testing.TB, cert, key string) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
