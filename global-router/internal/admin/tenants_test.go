package admin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

func TestTenantLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	c := e.Client
	d := sha256.Sum256([]byte("sk-acme"))
	in := &adminv1.Tenant{
		Name:              "acme",
		TokensPerMinute:   60000,
		RequestsPerSecond: 10,
		MaxConcurrent:     4,
		ApiKeySha256:      []string{hex.EncodeToString(d[:])},
	}

	_, err := c.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Name: "acme"}))
	wantCode(t, err, connect.CodeNotFound)
	put, err := c.PutTenant(ctx, connect.NewRequest(&adminv1.PutTenantRequest{Tenant: in}))
	if err != nil {
		t.Fatal(err)
	}
	rev := put.Msg.GetTenant().GetRevision()
	if rev == 0 {
		t.Fatal("stored tenant has no revision")
	}
	_, err = c.PutTenant(ctx, connect.NewRequest(&adminv1.PutTenantRequest{Tenant: in}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	got, err := c.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Name: "acme"}))
	if err != nil || got.Msg.GetTenant().GetMaxConcurrent() != 4 || got.Msg.GetTenant().GetRevision() != rev {
		t.Fatalf("GetTenant = %v, %v", got, err)
	}
	list, err := c.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{}))
	if err != nil || len(list.Msg.GetTenants()) != 1 {
		t.Fatalf("ListTenants = %v, %v", list, err)
	}

	for name, bad := range map[string]*adminv1.Tenant{
		"missing":     nil,
		"bad name":    {Name: "no spaces"},
		"negative":    {Name: "b", TokensPerMinute: -5},
		"bad digest":  {Name: "b", ApiKeySha256: []string{"sk-in-clear"}},
		"huge":        {Name: "b", MaxConcurrent: configstore.MaxConcurrent + 1},
		"foreign key": {Name: "b", ApiKeySha256: in.ApiKeySha256},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "foreign key" {
				waitTenant(t, e.Store, "acme")
			}
			_, err := c.PutTenant(ctx, connect.NewRequest(&adminv1.PutTenantRequest{Tenant: bad}))
			wantCode(t, err, connect.CodeInvalidArgument)
		})
	}

	_, err = c.DeleteTenant(ctx, connect.NewRequest(&adminv1.DeleteTenantRequest{Name: "acme", Revision: rev + 100}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	if _, err := c.DeleteTenant(
		ctx,
		connect.NewRequest(&adminv1.DeleteTenantRequest{Name: "acme", Revision: rev}),
	); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteTenant(ctx, connect.NewRequest(&adminv1.DeleteTenantRequest{Name: "acme"}))
	wantCode(t, err, connect.CodeNotFound)

	// Written around the API: DataLoss.
	if _, err := e.Etcd.Put(ctx, configstore.TenantKey("broken"), "{"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Name: "broken"}))
	wantCode(t, err, connect.CodeDataLoss)
}

func waitTenant(t *testing.T, s *configstore.Store, name string) {
	t.Helper()
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { _, ok := s.Snapshot().Tenant(name); return ok },
		"tenant "+name+" in the view",
	)
}
