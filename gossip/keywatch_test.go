package gossip_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

func TestKeyFileWatcherFollowsTheFile(t *testing.T) {
	oldKey, newKey := gossiptest.TestKey, []byte("a-brand-new-32-byte-gossip-key!!")
	path := filepath.Join(t.TempDir(), "gossip.key")
	write := func(keys ...[]byte) {
		var b []byte
		for _, k := range keys {
			b = append(b, base64.StdEncoding.EncodeToString(k)+"\n"...)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(oldKey)
	p := gossiptest.Start(t, 1, nil)
	n := p.Node(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = gossip.KeyFileWatcher{Node: n, Path: path, Interval: 20 * time.Millisecond}.Run(ctx) }()

	steps := []struct {
		name  string
		write [][]byte
		want  [][]byte
	}{
		{"new key accepted", [][]byte{oldKey, newKey}, [][]byte{oldKey, newKey}},
		{"new key sends", [][]byte{newKey, oldKey}, [][]byte{newKey, oldKey}},
		{"old key retired", [][]byte{newKey}, [][]byte{newKey}},
		{"a broken file keeps the keys", [][]byte{[]byte("short")}, [][]byte{newKey}},
	}
	for _, st := range steps {
		write(st.write...)
		poll.UntilState(t, 10*time.Second, func() (bool, string) {
			keys := n.Keys()
			return sameKeys(keys, st.want), fmt.Sprintf("keys %q", keys)
		}, fmt.Sprintf("%s: keys %q", st.name, st.want))
	}
}

func sameKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}
