package gossip

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of the AES-256 keys a key file holds.
const KeySize = 32

// ErrNoKeyring reports a key operation on a node that runs without encryption.
var ErrNoKeyring = errors.New("gossip: node runs without a keyring")

// LoadKeyFile reads a gossip key file: one or more base64-encoded 32-byte keys, one per line, with
// surrounding whitespace trimmed and blank lines ignored. The first key encrypts; all decrypt.
func LoadKeyFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip: read key file: %w", err)
	}
	keys, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("gossip: key file %s: %w", path, err)
	}
	return keys, nil
}

// ParseKeys parses the contents of a key file (see LoadKeyFile).
func ParseKeys(b []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: not base64: %w", i+1, err)
		}
		if len(k) != KeySize {
			return nil, fmt.Errorf("line %d: key is %d bytes, want %d", i+1, len(k), KeySize)
		}
		for _, prev := range keys {
			if bytes.Equal(prev, k) {
				return nil, fmt.Errorf("line %d: duplicate key", i+1)
			}
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	return keys, nil
}

// Keys returns the node's keyring, primary (sending) key first.
func (n *Node) Keys() [][]byte {
	if n.keyring == nil {
		return nil
	}
	primary := n.keyring.GetPrimaryKey()
	out := [][]byte{primary}
	for _, k := range n.keyring.GetKeys() {
		if !bytes.Equal(k, primary) {
			out = append(out, k)
		}
	}
	return out
}

// SetKeys makes the keyring exactly keys, keys[0] the sending key, without interrupting gossip:
// new keys are installed first, then the primary switched, then keys no longer listed removed.
// Rotating a pool's key is three rounds of SetKeys (or key-file reloads) on every node:
// [old, new] (everyone accepts new), [new, old] (everyone sends new), [new] (old retired).
func (n *Node) SetKeys(keys [][]byte) error {
	if n.keyring == nil {
		return ErrNoKeyring
	}
	if len(keys) == 0 {
		return errors.New("gossip: SetKeys needs at least one key")
	}
	for i, k := range keys {
		if err := n.keyring.AddKey(k); err != nil {
			return fmt.Errorf("gossip: install key %d: %w", i, err)
		}
	}
	if err := n.keyring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("gossip: use primary key: %w", err)
	}
	for _, k := range n.keyring.GetKeys() {
		if !containsKey(keys, k) {
			if err := n.keyring.RemoveKey(k); err != nil {
				return fmt.Errorf("gossip: remove key: %w", err)
			}
		}
	}
	n.metrics.keyChanges.Inc()
	return nil
}

// ReloadKeyFile reads path (see LoadKeyFile) and applies its keys with SetKeys.
func (n *Node) ReloadKeyFile(path string) error {
	keys, err := LoadKeyFile(path)
	if err != nil {
		return err
	}
	return n.SetKeys(keys)
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}
