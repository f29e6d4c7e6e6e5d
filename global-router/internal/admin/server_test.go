package admin_test

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin"
	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*admin.Config)
		field string // "" = valid
	}{
		{"valid", func(*admin.Config) {}, ""},
		{"no token", func(c *admin.Config) { c.Token = "" }, "Token"},
		{"no region", func(c *admin.Config) { c.Region = "" }, "Region"},
		{"no watch interval", func(c *admin.Config) { c.WatchInterval = 0 }, "WatchInterval"},
		{"min above default", func(c *admin.Config) { c.MinWatchInterval = time.Second }, "MinWatchInterval"},
		{"no resync", func(c *admin.Config) { c.WatchResync = 0 }, "WatchResync"},
		{"no store timeout", func(c *admin.Config) { c.StoreTimeout = -time.Second }, "StoreTimeout"},
		{"no request bound", func(c *admin.Config) { c.MaxRequestBytes = 0 }, "MaxRequestBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := admin.DefaultConfig()
			cfg.Token, cfg.Region = "t", "r"
			tt.edit(&cfg)
			err := cfg.Validate()
			if (err == nil) != (tt.field == "") || (err != nil && !strings.Contains(err.Error(), tt.field)) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tt.field)
			}
		})
	}
	cfg := admin.DefaultConfig()
	cfg.Token, cfg.Region = "t", "r"
	if _, err := admin.New(cfg, admin.Deps{}, nil, nil); err == nil || !strings.Contains(err.Error(), "Deps.Policies") {
		t.Fatalf("New without dependencies = %v, want an error naming the missing one", err)
	}
}

// TestEtcdAway: with etcd stopped, writes fail with a retryable code (not Internal) while the
// cluster table and the dry run keep answering from the last configuration.
func TestEtcdAway(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the store timeout")
	}
	own := etcdtest.Start(t, 1)
	e := admintest.Start(t, own)
	ctx := testCtx(t)
	own.Stop(0)
	_, err := e.Client.DrainCluster(ctx, connect.NewRequest(&adminv1.DrainClusterRequest{Cluster: "c1", Drain: true}))
	if c := connect.CodeOf(err); c != connect.CodeUnavailable {
		t.Fatalf("drain with etcd away = %v, want Unavailable", err)
	}
	if got := listClusters(t, e, ""); len(got) != 2 {
		t.Fatalf("clusters with etcd away = %v", got)
	}
	if r := explain(t, e, &adminv1.ExplainRouteRequest{Model: admintest.Model}); r.GetChosenCluster() != "c1" {
		t.Fatalf("explain with etcd away = %v", r)
	}
	if logs := e.Logs.String(); !strings.Contains(logs, "admin call failed") || !strings.Contains(logs, "DrainCluster") {
		t.Fatalf("the failed write was not logged as the server's fault: %q", logs)
	}
}

// Successful calls are not logged as failures (a handler's nil error has no code, which connect
// reports as Unknown); a client's mistake is not the server's fault either.
func TestSuccessNotLoggedAsFailure(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	listClusters(t, e, "")
	if _, err := e.Client.ListPolicies(ctx, connect.NewRequest(&adminv1.ListPoliciesRequest{})); err != nil {
		t.Fatal(err)
	}
	_, err := e.Client.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: "no-such-model"}))
	wantCode(t, err, connect.CodeNotFound)
	if logs := e.Logs.String(); strings.Contains(logs, "admin call failed") {
		t.Fatalf("logged a failure: %s", logs)
	}
}
