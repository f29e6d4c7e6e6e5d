package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"path/filepath"
	"time"
)

// selfSignedValidity is how long the certificate made for --secure-serving without --cert-path
// is valid. Gateways that connect to an endpoint picker with TLS do not verify it by default.
const selfSignedValidity = 10 * 365 * 24 * time.Hour

// extProcTLS returns the TLS configuration of --ext-proc-listen: nil without --secure-serving;
// --cert-path's tls.crt and tls.key, read at every handshake; or a self-signed certificate.
func (g *Gateway) extProcTLS() (*tls.Config, error) {
	switch {
	case !g.cfg.SecureServing:
		return nil, nil
	case g.cfg.CertPath != "":
		tc, err := serverTLS(filepath.Join(g.cfg.CertPath, "tls.crt"), filepath.Join(g.cfg.CertPath, "tls.key"), "")
		if err != nil {
			return nil, fmt.Errorf("--cert-path: %w", err)
		}
		return tc, nil
	}
	cert, err := selfSigned(g.cfg.Cluster, time.Now())
	if err != nil {
		return nil, fmt.Errorf("--secure-serving: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// selfSigned makes an ECDSA P-256 certificate for the ext_proc port, named after the cluster.
func selfSigned(cluster string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "switchyard cluster-gateway " + cluster, Organization: []string{"switchyard"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
