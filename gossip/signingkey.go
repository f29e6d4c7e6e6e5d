package gossip

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// ParseSigningKey parses an Ed25519 signing key: a PEM "PRIVATE KEY" block (PKCS #8, as
// `openssl genpkey -algorithm ed25519` writes) or the base64 encoding of the 32-byte seed
// (`head -c 32 /dev/urandom | base64`), surrounding whitespace trimmed.
func ParseSigningKey(b []byte) (ed25519.PrivateKey, error) {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("-----BEGIN")) {
		block, _ := pem.Decode(b)
		if block == nil || block.Type != "PRIVATE KEY" {
			return nil, errors.New("want a PEM PRIVATE KEY block (PKCS #8)")
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PKCS #8 key: %w", err)
		}
		ed, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("key is %T, want Ed25519", k)
		}
		return ed, nil
	}
	seed, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("want a PEM PRIVATE KEY block or the base64 of a %d-byte Ed25519 seed", ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ParsePublicKey parses an Ed25519 public key: a PEM "PUBLIC KEY" block (PKIX, as
// `openssl pkey -pubout` writes) or the base64 encoding of the raw 32-byte key, surrounding
// whitespace trimmed.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("-----BEGIN")) {
		block, _ := pem.Decode(b)
		if block == nil || block.Type != "PUBLIC KEY" {
			return nil, errors.New("want a PEM PUBLIC KEY block (PKIX)")
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PKIX key: %w", err)
		}
		ed, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("key is %T, want Ed25519", k)
		}
		return ed, nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf(
			"want a PEM PUBLIC KEY block or the base64 of a raw %d-byte Ed25519 public key",
			ed25519.PublicKeySize,
		)
	}
	return ed25519.PublicKey(raw), nil
}

// LoadSigningKeyFile reads a signing key file (see ParseSigningKey).
func LoadSigningKeyFile(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip: read signing key file: %w", err)
	}
	k, err := ParseSigningKey(b)
	if err != nil {
		return nil, fmt.Errorf("gossip: signing key file %s: %w", path, err)
	}
	return k, nil
}

// SetSigningKey makes key sign the summaries this node publishes from now on (nil: unsigned).
// The next summary is sent in full when the key id changes.
func (n *Node) SetSigningKey(key ed25519.PrivateKey) error {
	if key == nil {
		n.signingKey.Store(nil)
		return nil
	}
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("gossip: signing key is %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	n.signingKey.Store(&key)
	return nil
}

// SigningKeyID returns the id of the key that signs this node's summaries, or "" when unsigned.
func (n *Node) SigningKeyID() string {
	k := n.signingKey.Load()
	if k == nil {
		return ""
	}
	return KeyID((*k).Public().(ed25519.PublicKey))
}

// SigningKeyFileWatcher re-reads a signing key file every Interval and applies it with
// SetSigningKey when its content changed, so a cluster's signing key rotates without restarting
// its gateways (register the new public key first, then replace the file, then remove the old
// public key). A file that cannot be read or holds no valid key keeps the current key; the
// error is logged and counted in switchyard_gossip_signing_key_reload_errors_total.
type SigningKeyFileWatcher struct {
	// Node is the node whose summaries the key signs.
	Node *Node
	// Path is the key file (the same as the node's start-up key came from).
	Path string
	// Interval between reads. Default 10 s.
	Interval time.Duration
}

// Run watches until ctx ends.
func (w SigningKeyFileWatcher) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = 10 * time.Second
	}
	var last []byte
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := os.ReadFile(w.Path)
		if err == nil && bytes.Equal(cur, last) {
			continue
		}
		prev := w.Node.SigningKeyID()
		var key ed25519.PrivateKey
		if err == nil {
			key, err = ParseSigningKey(cur)
		}
		if err == nil {
			err = w.Node.SetSigningKey(key)
		}
		if err != nil {
			w.Node.log.Warn("gossip signing key file not applied; keeping the current key", "path", w.Path, "err", err)
			w.Node.metrics.signingKeyErrors.Inc()
			last = nil
			continue
		}
		if id := w.Node.SigningKeyID(); id != prev {
			w.Node.log.Info("gossip signing key reloaded", "path", w.Path, "key_id", id, "previous_key_id", prev)
		}
		last = cur
	}
}
