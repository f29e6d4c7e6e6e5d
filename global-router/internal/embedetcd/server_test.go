package embedetcd_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*embedetcd.Config)
		wantErr string
	}{
		{"default", func(*embedetcd.Config) {}, ""},
		{"no data dir", func(c *embedetcd.Config) { c.DataDir = "" }, "DataDir"},
		{"no name", func(c *embedetcd.Config) { c.Name = "" }, "Name"},
		{
			"https client without a certificate",
			func(c *embedetcd.Config) { c.ClientURL = "https://127.0.0.1:2379" },
			"ClientURL",
		},
		{"https client", func(c *embedetcd.Config) {
			c.ClientURL, c.ClientCertFile, c.ClientKeyFile, c.ClientCAFile = "https://127.0.0.1:2379", "c", "k", "ca"
		}, ""},
		{"certificate over http", func(c *embedetcd.Config) { c.ClientCertFile, c.ClientKeyFile = "c", "k" }, "ClientURL"},
		{
			"certificate without key",
			func(c *embedetcd.Config) { c.ClientURL, c.ClientCertFile = "https://127.0.0.1:2379", "c" },
			"ClientKeyFile",
		},
		{"client CA without certificate", func(c *embedetcd.Config) { c.ClientCAFile = "ca" }, "ClientCAFile"},
		{"https peer", func(c *embedetcd.Config) {
			c.ClientURL, c.ClientCertFile, c.ClientKeyFile = "https://127.0.0.1:2379", "c", "k"
			c.PeerURL = "https://127.0.0.1:2380"
		}, "PeerURL"},
		{"no port", func(c *embedetcd.Config) { c.PeerURL = "http://127.0.0.1" }, "PeerURL"},
		{"path", func(c *embedetcd.Config) { c.ClientURL = "http://127.0.0.1:1/x" }, "ClientURL"},
		{"port 0 in a cluster", func(c *embedetcd.Config) { c.InitialCluster = "a=http://127.0.0.1:1" }, "explicit port"},
		{"short election", func(c *embedetcd.Config) { c.ElectionTimeout = c.HeartbeatInterval }, "ElectionTimeout"},
		{"zero ready timeout", func(c *embedetcd.Config) { c.ReadyTimeout = 0 }, "ReadyTimeout"},
		{"negative retention", func(c *embedetcd.Config) { c.CompactionRetention = -1 }, "CompactionRetention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := embedetcd.DefaultConfig("data")
			tt.edit(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestStartRunRestart starts a member on free ports, writes through a client, stops it with Run's
// context and starts it again on the same data and addresses.
func TestStartRunRestart(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := embedetcd.DefaultConfig(t.TempDir())
	cfg.UnsafeNoFsync = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s, err := embedetcd.Start(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(s.Endpoints()[0], ":0") {
		t.Fatalf("endpoint %s still has port 0", s.Endpoints()[0])
	}
	put(ctx, t, s.Endpoints(), "k", "v1")

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}

	s2, err := embedetcd.Start(ctx, s.Config(), logger)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer s2.Close()
	if s2.Endpoints()[0] != s.Endpoints()[0] {
		t.Fatalf("restarted on %s, want %s", s2.Endpoints()[0], s.Endpoints()[0])
	}
	if got := get(ctx, t, s2.Endpoints(), "k"); got != "v1" {
		t.Fatalf("after restart k = %q, want v1", got)
	}
	if strings.Contains(logs.String(), "level=INFO") {
		t.Fatalf("etcd logged below warning level:\n%s", logs.String())
	}
}

func TestStartFailsOnTakenPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := embedetcd.DefaultConfig(t.TempDir())
	cfg.UnsafeNoFsync = true
	s, err := embedetcd.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The same client port is taken by the running member: the second start must fail, not hang.
	cfg2 := s.Config()
	cfg2.DataDir = t.TempDir()
	cfg2.PeerURL = "http://127.0.0.1:0"
	if s2, err := embedetcd.Start(ctx, cfg2, slog.New(slog.DiscardHandler)); err == nil {
		s2.Close()
		t.Fatal("second member on a taken client port started")
	}
}

func newClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func put(ctx context.Context, t *testing.T, endpoints []string, k, v string) {
	t.Helper()
	if _, err := newClient(t, endpoints).Put(ctx, k, v); err != nil {
		t.Fatalf("put: %v", err)
	}
}

func get(ctx context.Context, t *testing.T, endpoints []string, k string) string {
	t.Helper()
	resp, err := newClient(t, endpoints).Get(ctx, k)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
