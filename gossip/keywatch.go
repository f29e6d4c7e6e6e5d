package gossip

import (
	"bytes"
	"context"
	"os"
	"time"
)

// KeyFileWatcher re-reads a key file every Interval and applies it with SetKeys when its content
// changed, so a pool's key rotates (three edits of the file, see SetKeys) without restarting any
// node. Kubernetes updates a mounted Secret in place, which is what this follows. A file that
// cannot be read or holds no valid key keeps the current keys; the error is logged and counted.
type KeyFileWatcher struct {
	// Node is the node whose keyring follows the file.
	Node *Node
	// Path is the key file (the same as the node's start-up keys came from).
	Path string
	// Interval between reads. Default 10 s.
	Interval time.Duration
}

// Run watches until ctx ends.
func (w KeyFileWatcher) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = 10 * time.Second
	}
	var last []byte // the first read is applied (a no-op when the keys are the start-up ones)
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := os.ReadFile(w.Path)
		if err != nil || bytes.Equal(cur, last) {
			continue
		}
		if err := w.Node.ReloadKeyFile(w.Path); err != nil {
			w.Node.log.Warn("gossip key file not applied; keeping the current keys", "path", w.Path, "err", err)
			w.Node.metrics.keyErrors.Inc()
			continue
		}
		last = cur
		w.Node.log.Info("gossip keyring reloaded", "path", w.Path, "keys", len(w.Node.Keys()))
	}
}
