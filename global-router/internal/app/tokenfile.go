package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// parseTokens reads an admin token file: one or more tokens, one per line, each with its
// surrounding whitespace trimmed; blank lines are skipped. Every token listed is accepted, so a
// token rotates without downtime: add the new one, move the clients, remove the old one.
func parseTokens(b []byte) ([]string, error) {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no token in file")
	}
	return out, nil
}

// tokenFileWatcher re-reads the admin token file every Interval and applies its tokens when its
// content changed, as gossip.KeyFileWatcher does for the gossip keyring (Kubernetes updates a
// mounted Secret in place). A file that cannot be read or holds no token keeps the tokens in force;
// the error is logged.
type tokenFileWatcher struct {
	// Path is the token file the start-up tokens came from.
	Path string
	// Interval between reads. Default 10 s.
	Interval time.Duration
	// Apply replaces the accepted tokens.
	Apply func(tokens []string) error
	// Log receives a line per reload and per refused file.
	Log *slog.Logger
}

// Run watches until ctx ends.
func (w tokenFileWatcher) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = 10 * time.Second
	}
	var last []byte     // the first read is applied (the same tokens, unless the file just changed)
	unreadable := false // logged once per outage, not every interval
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := os.ReadFile(w.Path)
		if err != nil {
			if !unreadable {
				w.Log.Warn("admin token file unreadable; keeping the tokens in force", "path", w.Path, "err", err)
			}
			unreadable = true
			continue
		}
		unreadable = false
		if bytes.Equal(cur, last) {
			continue
		}
		last = cur // a refused content is logged once; the next edit is tried again
		tokens, err := parseTokens(cur)
		if err == nil {
			err = w.Apply(tokens)
		}
		if err != nil {
			w.Log.Warn("admin token file not applied; keeping the tokens in force", "path", w.Path, "err", err)
			continue
		}
		w.Log.Info("admin token file reloaded", "path", w.Path, "tokens", len(tokens))
	}
}

// tokenWatcher follows the file the admin tokens came from, so editing it rotates the token.
func (r *Router) tokenWatcher() tokenFileWatcher {
	return tokenFileWatcher{Path: adminTokenPath(r.cfg), Apply: r.admin.SetTokens, Log: r.log.With("component", "admin")}
}

// adminTokenPath is the admin token file: --admin-token-file, or the generated one in --data-dir.
func adminTokenPath(cfg Config) string {
	if cfg.AdminTokenFile != "" {
		return cfg.AdminTokenFile
	}
	return filepath.Join(cfg.DataDir, "admin-token")
}
