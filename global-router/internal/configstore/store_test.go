package configstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

func TestPolicyCRUD(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t, nsClient(t, shared))

	if _, err := s.GetPolicy(ctx, "m1"); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("GetPolicy before put = %v, want ErrNotFound", err)
	}
	p := validPolicy()
	p.Model = "m1"
	created, err := s.PutPolicy(ctx, p, 0)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetRevision() <= 0 {
		t.Fatalf("created revision %d, want > 0", created.GetRevision())
	}
	got, err := s.GetPolicy(ctx, "m1")
	if err != nil || !proto.Equal(got, created) {
		t.Fatalf("GetPolicy = %v, %v; want %v", got, err, created)
	}

	p.OverflowCap = 7
	updated, err := s.PutPolicy(ctx, p, created.GetRevision())
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetRevision() <= created.GetRevision() || updated.GetOverflowCap() != 7 {
		t.Fatalf("updated = %v, want a newer revision and cap 7", updated)
	}
	if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m0"}, 0); err != nil {
		t.Fatal(err)
	}
	list, bad, err := s.ListPolicies(ctx)
	if err != nil || len(list) != 2 || list[0].GetModel() != "m0" || !proto.Equal(list[1], updated) || len(bad) != 0 {
		t.Fatalf("ListPolicies = %v, %v, %v; want m0 then %v", list, bad, err, updated)
	}

	if err := s.DeletePolicy(ctx, "m1", created.GetRevision()); !errors.Is(err, configstore.ErrConflict) {
		t.Fatalf("delete at a stale revision = %v, want ErrConflict", err)
	}
	if err := s.DeletePolicy(ctx, "m1", updated.GetRevision()); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeletePolicy(ctx, "m1", 0); !errors.Is(err, configstore.ErrNotFound) {
		t.Fatalf("delete again = %v, want ErrNotFound", err)
	}
	if err := s.DeletePolicy(ctx, "m0", 0); err != nil {
		t.Fatalf("unconditional delete: %v", err)
	}
}

func TestPutPolicyConflicts(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t, nsClient(t, shared))
	p := &adminv1.Policy{Model: "m"}
	first, err := s.PutPolicy(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		model    string
		expected int64
		want     error
	}{
		{"create over an existing policy", "m", 0, configstore.ErrConflict},
		{"stale revision", "m", first.GetRevision() - 1, configstore.ErrConflict},
		{"future revision", "m", first.GetRevision() + 100, configstore.ErrConflict},
		{"update of a missing policy", "gone", first.GetRevision(), configstore.ErrConflict},
		{"negative revision", "m", -1, configstore.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.PutPolicy(ctx, &adminv1.Policy{Model: tt.model, OverflowCap: 9}, tt.expected)
			if !errors.Is(err, tt.want) {
				t.Fatalf("PutPolicy = %v, want %v", err, tt.want)
			}
		})
	}
	got, err := s.GetPolicy(ctx, "m")
	if err != nil || got.GetOverflowCap() != 0 || got.GetRevision() != first.GetRevision() {
		t.Fatalf("after failed writes the policy is %v, %v; want it unchanged", got, err)
	}
	if _, err := s.PutPolicy(
		ctx,
		&adminv1.Policy{Model: "m", OverflowCap: -1},
		first.GetRevision(),
	); !errors.Is(
		err,
		configstore.ErrInvalid,
	) {
		t.Fatalf("invalid put = %v, want ErrInvalid", err)
	}
}

// TestConcurrentWriters: writers that read the same revision race; exactly one wins.
func TestConcurrentWriters(t *testing.T) {
	ctx := testCtx(t)
	cli := nsClient(t, shared)
	reg := prometheus.NewRegistry()
	s, err := configstore.New(cli, etcdtest.Discard, reg)
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: int32(i + 1)}, base.GetRevision())
		})
	}
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, configstore.ErrConflict):
			conflicts++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 || conflicts != writers-1 {
		t.Fatalf("%d wins and %d conflicts, want 1 and %d", wins, conflicts, writers-1)
	}
	want := `
# HELP switchyard_router_config_writes_total Config writes by operation and result (ok, conflict, error).
# TYPE switchyard_router_config_writes_total counter
switchyard_router_config_writes_total{op="put_policy",result="conflict"} 7
switchyard_router_config_writes_total{op="put_policy",result="ok"} 2
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_router_config_writes_total",
	); err != nil {
		t.Fatal(err)
	}
}

func TestDrainArguments(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t, nsClient(t, shared))
	tests := []struct {
		name string
		call func() error
	}{
		{"empty cluster", func() error { return s.SetClusterDrain(ctx, "", true) }},
		{"cluster with slash", func() error { return s.SetClusterDrain(ctx, "a/b", true) }},
		{"empty region", func() error { return s.SetRegionDrain(ctx, "", false) }},
		{"get invalid model", func() error { _, err := s.GetPolicy(ctx, ""); return err }},
		{"delete invalid model", func() error { return s.DeletePolicy(ctx, "a b", 0) }},
		{"put nil", func() error { _, err := s.PutPolicy(ctx, nil, 0); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, configstore.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestNewRejectsDuplicateMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cli := nsClient(t, shared)
	if _, err := configstore.New(cli, nil, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := configstore.New(cli, nil, reg); err == nil {
		t.Fatal("second store on the same registry: want an error")
	}
	if _, err := configstore.New(nil, nil, nil); err == nil {
		t.Fatal("nil client: want an error")
	}
}
