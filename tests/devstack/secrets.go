package devstack

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeSecrets creates the stack's gossip keyring and admin token in the data directory, once:
// later runs reuse them, so a token pasted into a shell keeps working.
func (s *Stack) writeSecrets() error {
	s.keyFile = filepath.Join(s.opt.DataDir, "gossip.key")
	s.tokenFile = filepath.Join(s.opt.DataDir, "admin-token")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := writeOnce(s.keyFile, base64.StdEncoding.EncodeToString(key)); err != nil {
		return err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	return writeOnce(s.tokenFile, hex.EncodeToString(tok))
}

// writeOnce writes content to path with mode 0600 unless the file already holds something.
func writeOnce(path, content string) error {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
		return nil
	}
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	return nil
}
