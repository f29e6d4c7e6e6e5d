package etcdclient_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient"
	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient/etcdclienttest"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestValidate(t *testing.T) {
	https := []string{"https://127.0.0.1:2379"}
	tests := []struct {
		name    string
		cfg     etcdclient.Config
		wantErr string // substring; "" = valid
	}{
		{"plain", etcdclient.Config{Endpoints: []string{"http://a:2379", "http://b:2379"}}, ""},
		{
			"tls with client certificate and password",
			etcdclient.Config{Endpoints: https, CAFile: "ca", CertFile: "c", KeyFile: "k", Username: "u", PasswordFile: "p"},
			"",
		},
		{"https with the system roots", etcdclient.Config{Endpoints: https}, ""},
		{"no endpoint", etcdclient.Config{}, "--etcd-endpoints"},
		{"not a URL", etcdclient.Config{Endpoints: []string{"127.0.0.1:2379"}}, "http(s)://host:port"},
		{"unknown scheme", etcdclient.Config{Endpoints: []string{"unix://a:1"}}, "scheme"},
		{"mixed schemes", etcdclient.Config{Endpoints: []string{"http://a:1", "https://b:1"}}, "mixes"},
		{"cert without key", etcdclient.Config{Endpoints: https, CertFile: "c"}, "--etcd-key-file"},
		{"key without cert", etcdclient.Config{Endpoints: https, KeyFile: "k"}, "--etcd-cert-file"},
		{"CA over http", etcdclient.Config{Endpoints: []string{"http://a:1"}, CAFile: "ca"}, "https"},
		{"password without user", etcdclient.Config{Endpoints: https, PasswordFile: "p"}, "--etcd-username"},
		{"user without password", etcdclient.Config{Endpoints: https, Username: "u"}, "--etcd-password-file"},
		{"colon in user", etcdclient.Config{Endpoints: https, Username: "a:b", PasswordFile: "p"}, "':'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// startEtcd starts a real embedded etcd member; mutate adjusts its configuration first.
func startEtcd(t *testing.T, mutate func(*embedetcd.Config)) *embedetcd.Server {
	t.Helper()
	cfg := embedetcd.DefaultConfig(t.TempDir())
	cfg.UnsafeNoFsync, cfg.LogLevel, cfg.CompactionRetention = true, slog.LevelError, 0
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 50*time.Millisecond, 500*time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := embedetcd.Start(ctx, cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// roundTrip writes and reads back a key under the router's prefix through cli within a few
// seconds.
func roundTrip(cli *clientv3.Client) error { return roundTripKey(cli, "/switchyard/v1/test") }

// roundTripKey puts and gets key. The deadline is generous: with authentication on, etcd checks
// the password with bcrypt, which the race detector on a loaded machine makes take seconds.
func roundTripKey(cli *clientv3.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, "v"); err != nil {
		return err
	}
	_, err := cli.Get(ctx, key)
	return err
}

// An etcd that serves TLS and requires client certificates (client-cert-auth) is reached with
// the CA and a client certificate, and refuses a client without one or one that does not trust
// its certificate.
func TestTLSWithClientCertificates(t *testing.T) {
	files := etcdclienttest.Write(t)
	srv := startEtcd(t, func(c *embedetcd.Config) {
		c.ClientURL = "https://127.0.0.1:0"
		c.ClientCertFile, c.ClientKeyFile, c.ClientCAFile = files.ServerCert, files.ServerKey, files.CA
	})
	other := etcdclienttest.Write(t) // an unrelated CA
	tests := []struct {
		name string
		cfg  etcdclient.Config
		ok   bool
	}{
		{
			"CA and client certificate",
			etcdclient.Config{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey},
			true,
		},
		{"no client certificate", etcdclient.Config{CAFile: files.CA}, false},
		{
			"client certificate of another CA",
			etcdclient.Config{CAFile: files.CA, CertFile: other.ClientCert, KeyFile: other.ClientKey},
			false,
		},
		{
			"server not trusted",
			etcdclient.Config{CAFile: other.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey},
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // a refused client waits out its timeout
			tt.cfg.Endpoints, tt.cfg.DialTimeout = srv.Endpoints(), 3*time.Second
			cli, err := etcdclient.New(tt.cfg, discard)
			if err != nil {
				if tt.ok {
					t.Fatal(err)
				}
				return
			}
			defer cli.Close()
			err = roundTrip(cli)
			if tt.ok != (err == nil) {
				t.Fatalf("round trip: %v, want success %v", err, tt.ok)
			}
		})
	}
}

// Missing or unreadable TLS files and password files are errors from New, naming the problem.
func TestNewFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	https := []string{"https://127.0.0.1:1"}
	tests := []struct {
		name    string
		cfg     etcdclient.Config
		wantErr string
	}{
		{
			"missing certificate",
			etcdclient.Config{Endpoints: https, CertFile: filepath.Join(dir, "no.crt"), KeyFile: filepath.Join(dir, "no.key")},
			"TLS",
		},
		{"missing CA", etcdclient.Config{Endpoints: https, CAFile: filepath.Join(dir, "no-ca.crt")}, "TLS"},
		{
			"missing password file",
			etcdclient.Config{Endpoints: https, Username: "u", PasswordFile: filepath.Join(dir, "nope")},
			"--etcd-password-file",
		},
		{"empty password file", etcdclient.Config{Endpoints: https, Username: "u", PasswordFile: empty}, "is empty"},
		{"invalid config", etcdclient.Config{}, "--etcd-endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, err := etcdclient.New(tt.cfg, discard)
			if err == nil {
				cli.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// With etcd's authentication on, the user and the password from its file (trailing newline
// ignored) are let in, with the role config-store.md documents (read and write under
// /switchyard/ alone); a wrong password is refused by New itself.
func TestPasswordAuthentication(t *testing.T) {
	srv := startEtcd(t, nil)
	admin, err := etcdclient.New(etcdclient.Config{Endpoints: srv.Endpoints()}, discard)
	if err != nil {
		t.Fatal(err)
	}
	// Generous: each UserAdd hashes its password with bcrypt, slow under the race detector on a
	// loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := admin.RoleAdd(ctx, "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "root", "root-secret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "switchyard"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "switchyard", "/switchyard/", clientv3.GetPrefixRangeEnd("/switchyard/"),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "router", "router-secret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "router", "switchyard"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := etcdclient.Config{
		Endpoints:    srv.Endpoints(),
		Username:     "router",
		PasswordFile: write("good", "router-secret\n"),
		// Generous: etcd checks the password with bcrypt, seconds under the race detector on a
		// loaded machine, and a deadline would hide the wrong password's refusal below.
		DialTimeout: 20 * time.Second,
	}
	cli, err := etcdclient.New(cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(cli); err != nil {
		t.Fatalf("authenticated round trip: %v", err)
	}
	if err := roundTripKey(cli, "/elsewhere"); err == nil {
		t.Fatal("the role's permission did not bound the user to /switchyard/")
	}
	storeWorks(t, cli) // the role is enough for the router's writes
	cli.Close()

	anon, err := etcdclient.New(etcdclient.Config{Endpoints: srv.Endpoints(), DialTimeout: 3 * time.Second}, discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(anon); err == nil {
		t.Fatal("a client without credentials wrote to an etcd with authentication on")
	}
	anon.Close()

	cfg.PasswordFile = write("bad", "guess\n")
	if cli, err := etcdclient.New(cfg, discard); err == nil {
		cli.Close()
		t.Fatal("a wrong password was accepted")
	} else if !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("error %v, want etcd's authentication failure", err)
	}
}

// storeWorks writes and reads a policy through the config store on cli and wins a leader
// election on it.
func storeWorks(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := configstore.New(cli, discard, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 1}, 0); err != nil {
		t.Fatalf("PutPolicy: %v", err)
	}
	if p, err := store.GetPolicy(ctx, "m"); err != nil || p.GetOverflowCap() != 1 {
		t.Fatalf("GetPolicy = %v, %v", p, err)
	}
	el, err := configstore.NewElector(cli, configstore.DefaultElectionConfig("test", "c1"), discard)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- el.Run(runCtx) }()
	for !el.IsLeader() {
		select {
		case <-ctx.Done():
			t.Fatal("not elected with the documented role")
		case err := <-done:
			t.Fatalf("the election ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("election Run = %v", err)
	}
}
