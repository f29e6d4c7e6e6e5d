package configstore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

func digestOf(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:])
}

func TestValidateTenant(t *testing.T) {
	ok := digestOf("k1")
	tests := []struct {
		name    string
		tenant  *adminv1.Tenant
		wantErr string
	}{
		{
			"valid",
			&adminv1.Tenant{
				Name:              "acme",
				TokensPerMinute:   1000,
				RequestsPerSecond: 2.5,
				MaxConcurrent:     4,
				ApiKeySha256:      []string{ok},
			},
			"",
		},
		{"no limits", &adminv1.Tenant{Name: "acme"}, ""},
		{"missing", nil, "missing"},
		{"empty name", &adminv1.Tenant{}, "name"},
		{"bad name", &adminv1.Tenant{Name: "a b"}, "name"},
		{"negative tokens", &adminv1.Tenant{Name: "a", TokensPerMinute: -1}, "tokens_per_minute"},
		{"huge tokens", &adminv1.Tenant{Name: "a", TokensPerMinute: configstore.MaxTokensPerMinute + 1}, "tokens_per_minute"},
		{"nan rps", &adminv1.Tenant{Name: "a", RequestsPerSecond: math.NaN()}, "requests_per_second"},
		{"negative rps", &adminv1.Tenant{Name: "a", RequestsPerSecond: -0.5}, "requests_per_second"},
		{
			"huge rps",
			&adminv1.Tenant{Name: "a", RequestsPerSecond: configstore.MaxRequestsPerSecond + 1},
			"requests_per_second",
		},
		{"negative concurrency", &adminv1.Tenant{Name: "a", MaxConcurrent: -1}, "max_concurrent"},
		{"huge concurrency", &adminv1.Tenant{Name: "a", MaxConcurrent: configstore.MaxConcurrent + 1}, "max_concurrent"},
		{"short digest", &adminv1.Tenant{Name: "a", ApiKeySha256: []string{"abcd"}}, "api_key_sha256[0]"},
		{"upper-case digest", &adminv1.Tenant{Name: "a", ApiKeySha256: []string{strings.ToUpper(ok)}}, "api_key_sha256[0]"},
		{"not hex", &adminv1.Tenant{Name: "a", ApiKeySha256: []string{strings.Repeat("g", 64)}}, "api_key_sha256[0]"},
		{"digest twice", &adminv1.Tenant{Name: "a", ApiKeySha256: []string{ok, ok}}, "listed twice"},
		{"too many keys", &adminv1.Tenant{Name: "a", ApiKeySha256: manyDigests(configstore.MaxAPIKeys + 1)}, "at most"},
		{"negative revision", &adminv1.Tenant{Name: "a", Revision: -1}, "revision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := configstore.ValidateTenant(tc.tenant)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateTenant = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, configstore.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidateTenant = %v, want ErrInvalid naming %q", err, tc.wantErr)
			}
		})
	}
}

func manyDigests(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = digestOf(strings.Repeat("k", i+1))
	}
	return out
}

// TestTenantLifecycle writes, reads, conflicts, looks up by key and deletes a tenant through a
// real etcd, and checks the watched view follows every step.
func TestTenantLifecycle(t *testing.T) {
	cli := nsClient(t, shared)
	s := newStore(t, cli)
	runStore(t, s)
	ctx := testCtx(t)

	in := &adminv1.Tenant{
		Name:              "acme",
		TokensPerMinute:   6000,
		RequestsPerSecond: 5,
		MaxConcurrent:     2,
		ApiKeySha256:      []string{digestOf("key-1")},
	}
	stored, err := s.PutTenant(ctx, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if stored.GetRevision() == 0 {
		t.Fatal("stored tenant has no revision")
	}
	if _, err := s.PutTenant(ctx, in, 0); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	// Another tenant may not take acme's key (checked against the watched view).
	poll.Until(t, waitTimeout, func() bool { _, ok := s.Snapshot().Tenant("acme"); return ok }, "acme in the view")
	if _, err := s.PutTenant(
		ctx,
		&adminv1.Tenant{Name: "other", ApiKeySha256: in.ApiKeySha256},
		0,
	); !errors.Is(
		err,
		configstore.ErrInvalid,
	) {
		t.Fatalf("put of another tenant with acme's key = %v, want ErrInvalid", err)
	}
	got, err := s.GetTenant(ctx, "acme")
	if err != nil || got.GetTokensPerMinute() != 6000 || got.GetRevision() != stored.GetRevision() {
		t.Fatalf("GetTenant = %v, %v; want the stored tenant", got, err)
	}
	poll.Until(t, waitTimeout, func() bool {
		name, ok := s.Snapshot().TenantByKeyDigest(sha256.Sum256([]byte("key-1")))
		return ok && name == "acme"
	}, "key-1 resolves to acme")
	v := s.Snapshot()
	if !v.HasAPIKeys() {
		t.Fatal("HasAPIKeys = false with a key stored")
	}
	if _, ok := v.TenantByKeyDigest(sha256.Sum256([]byte("key-2"))); ok {
		t.Fatal("an unknown key resolved to a tenant")
	}

	// Rotate the key: the old one stops resolving.
	in.ApiKeySha256 = []string{digestOf("key-2")}
	if _, err := s.PutTenant(ctx, in, 1); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("put at a stale revision = %v, want ErrConflict", err)
	}
	if _, err := s.PutTenant(ctx, in, stored.GetRevision()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool {
		v := s.Snapshot()
		_, old := v.TenantByKeyDigest(sha256.Sum256([]byte("key-1")))
		name, _ := v.TenantByKeyDigest(sha256.Sum256([]byte("key-2")))
		return !old && name == "acme"
	}, "key rotated")

	list, err := s.ListTenants(ctx)
	if err != nil || len(list) != 1 || list[0].GetName() != "acme" {
		t.Fatalf("ListTenants = %v, %v", list, err)
	}
	if err := s.DeleteTenant(ctx, "acme", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTenant(ctx, "acme", 0); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { return !s.Snapshot().HasAPIKeys() && s.Snapshot().Tenants() == 0 },
		"tenant gone",
	)
}

// TestUnreadableTenantFailsClosed: a value written around the admin API that does not decode
// drops the tenant's previous limits and keys and marks the tenant unreadable.
func TestUnreadableTenantFailsClosed(t *testing.T) {
	cli := nsClient(t, shared)
	s := newStore(t, cli)
	runStore(t, s)
	ctx := testCtx(t)
	if _, err := s.PutTenant(
		ctx,
		&adminv1.Tenant{Name: "acme", MaxConcurrent: 1, ApiKeySha256: []string{digestOf("k")}},
		0,
	); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().HasAPIKeys() }, "key loaded")
	for _, bad := range []string{`garbage`, `{"name":"acme","max_concurent":1}`, `{"name":"other"}`, `{"name":"acme","max_concurrent":-1}`} {
		if _, err := cli.Put(ctx, configstore.TenantKey("acme"), bad); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, waitTimeout, func() bool {
			v := s.Snapshot()
			_, unreadable := v.UnreadableTenant("acme")
			_, readable := v.Tenant("acme")
			return unreadable && !readable && !v.HasAPIKeys()
		}, "acme unreadable after "+bad)
		if _, err := s.GetTenant(ctx, "acme"); !errors.Is(err, configstore.ErrUnreadable) {
			t.Fatalf("GetTenant of %s = %v, want ErrUnreadable", bad, err)
		}
	}
	if err := s.DeleteTenant(ctx, "acme", 0); err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { _, u := s.Snapshot().UnreadableTenant("acme"); return !u },
		"unreadable mark gone",
	)
}
