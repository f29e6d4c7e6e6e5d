package gossip_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/gossip"
)

func TestParseKeys(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	e1, e2 := base64.StdEncoding.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	tests := []struct {
		name    string
		text    string
		want    [][]byte
		wantErr string
	}{
		{"one key with whitespace", "  " + e1 + " \n\n", [][]byte{k1}, ""},
		{"two keys, first primary", e2 + "\r\n" + e1 + "\n", [][]byte{k2, k1}, ""},
		{"empty", " \n ", nil, "no keys"},
		{"not base64", "!!!", nil, "line 1"},
		{"16-byte key", base64.StdEncoding.EncodeToString(k1[:16]), nil, "want 32"},
		{"duplicate", e1 + "\n" + e1, nil, "duplicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gossip.ParseKeys([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %d keys, err %v", len(got), err)
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Errorf("key %d differs", i)
				}
			}
		})
	}
}

func TestLoadKeyFileAndReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gossip.key")
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	write := func(keys ...[]byte) {
		var lines []string
		for _, k := range keys {
			lines = append(lines, base64.StdEncoding.EncodeToString(k))
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(k1)
	keys, err := gossip.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := gossip.DefaultLANConfig()
	c.NodeName, c.Role, c.Region, c.Keys = "r", gossip.RoleRouter, "r1", keys
	n, err := gossip.New(c)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		file [][]byte
	}{
		{"add new", [][]byte{k1, k2}},
		{"switch primary", [][]byte{k2, k1}},
		{"remove old", [][]byte{k2}},
	}
	for _, s := range steps {
		write(s.file...)
		if err := n.ReloadKeyFile(path); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := n.Keys()
		if len(got) != len(s.file) || !bytes.Equal(got[0], s.file[0]) {
			t.Fatalf("%s: keyring has %d keys", s.name, len(got))
		}
	}
	if _, err := gossip.LoadKeyFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing key file accepted")
	}
}
