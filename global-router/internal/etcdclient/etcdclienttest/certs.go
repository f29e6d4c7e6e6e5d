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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdclienttest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{CA: filepath.Join(dir, "ca.crt")}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (cert, key string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		writePEM(t, cert, "CERTIFICATE", der)
		writePEM(t, key, "EC PRIVATE KEY", keyDER)
		return cert, key
	}
	f.ServerCert, f.ServerKey = leaf("server", 2, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	f.ClientCert, f.ClientKey = leaf("router", 3, x509.ExtKeyUsageClientAuth, nil, nil)
	return f
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
