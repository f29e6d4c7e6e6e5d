package identity_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/contract/syncbuf"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/global-router/internal/identity"
	"github.com/switchyard-dev/switchyard/gossip"
)

var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

// newStore returns a running config store in a namespace of its own.
func newStore(t *testing.T) *configstore.Store {
	t.Helper()
	s, _ := newStoreClient(t)
	return s
}

// newStoreClient returns a running config store in a namespace of its own and a client of that
// namespace, to write values around the store.
func newStoreClient(t *testing.T) (*configstore.Store, *clientv3.Client) {
	t.Helper()
	cli := etcdtest.NamespacedClient(t, shared.Endpoints(), etcdtest.UniqueNamespace("identity-test"))
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("store Run = %v", err)
		}
	})
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().Loaded() }, "config loaded")
	return s, cli
}

// waitTimeout bounds every wait for a condition in these tests: generous, as a busy machine
// is slow.
const waitTimeout = 15 * time.Second

func key(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	return ed25519.NewKeyFromSeed(seed)
}

func pub(k ed25519.PrivateKey) []byte { return k.Public().(ed25519.PublicKey) }

// register stores a registration of c1 and waits until the store's view has it.
func register(t *testing.T, s *configstore.Store, r *adminv1.ClusterRegistration) {
	t.Helper()
	putWatched(t, "registration",
		func() (*adminv1.ClusterRegistration, error) {
			return s.PutRegistration(context.Background(), r, 0, true)
		},
		func() (*adminv1.ClusterRegistration, bool) {
			got, ok := s.Snapshot().Registration(r.GetCluster())
			return got.Stored, ok
		})
}

// putWatched stores a registration with put and waits until watched, the store's view of it,
// has its new revision; what names it in the wait.
func putWatched[R interface{ GetRevision() int64 }](
	t *testing.T,
	what string,
	put func() (R, error),
	watched func() (R, bool),
) {
	t.Helper()
	stored, err := put()
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool {
		got, ok := watched()
		return ok && got.GetRevision() == stored.GetRevision()
	}, what+" watched")
}

// summary returns a summary of c1 as its gateway publishes it, signed with k (nil: unsigned).
func summary(t testing.TB, k ed25519.PrivateKey, edit func(*gossipv1.CapacitySummary)) *gossipv1.CapacitySummary {
	t.Helper()
	s := &gossipv1.CapacitySummary{SchemaVersion: gossip.SchemaVersion, Cluster: "c1", Region: "us-east-1",
		GatewayUrl: "https://gw.c1.example.com", Node: "gw-c1-0", Sequence: 42, GeneratedAtUnixNano: 42,
		Models: []*gossipv1.ModelCapacity{{Name: "llama", ReadyPods: 2}}}
	if edit != nil {
		edit(s)
	}
	if k != nil {
		if err := gossip.SignSummary(s, k); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func registration() *adminv1.ClusterRegistration {
	return &adminv1.ClusterRegistration{Cluster: "c1", Region: "us-east-1",
		GatewayUrls: []string{"https://gw.c1.example.com", "http://gw-plain.c1.example.com"},
		Models:      []string{"llama", "llama-sql"}, PublicKeys: [][]byte{pub(key(1)), pub(key(2))}}
}

func TestVerifySummary(t *testing.T) {
	s := newStore(t)
	register(t, s, registration())
	real, rotated, rogue := key(1), key(2), key(9)
	tests := []struct {
		name      string
		summary   *gossipv1.CapacitySummary
		cleartext bool
		want      string // reason; "" = accepted
	}{
		{"signed by the registered key", summary(t, real, nil), false, ""},
		{"signed by the second key (rotation)", summary(t, rotated, nil), false, ""},
		{
			"unregistered cluster",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.Cluster = "c9" }),
			false,
			identity.ReasonUnregistered,
		},
		{"unsigned", summary(t, nil, nil), false, identity.ReasonUnsigned},
		{"another key", summary(t, rogue, nil), false, identity.ReasonUnknownKey},
		{"forged key id", func() *gossipv1.CapacitySummary {
			x := summary(t, rogue, nil)
			x.SigningKeyId = gossip.KeyID(pub(real))
			return x
		}(), false, identity.ReasonBadSignature},
		{"redirected after signing", func() *gossipv1.CapacitySummary {
			x := summary(t, real, nil)
			x.GatewayUrl = "https://intruder.example.com"
			return x
		}(), false, identity.ReasonBadSignature},
		{"sequence raised after signing", func() *gossipv1.CapacitySummary {
			x := summary(t, real, nil)
			x.Sequence = ^uint64(0)
			return x
		}(), false, identity.ReasonBadSignature},
		{
			"other region",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.Region = "eu-west-1" }),
			false,
			identity.ReasonRegionMismatch,
		},
		{
			"unregistered url",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "https://gw2.c1.example.com" }),
			false,
			identity.ReasonURLMismatch,
		},
		{
			"url with a path",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "https://gw.c1.example.com/x" }),
			false,
			identity.ReasonURLMismatch,
		},
		{
			"cleartext url refused",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "http://gw-plain.c1.example.com" }),
			false,
			identity.ReasonCleartextURL,
		},
		{
			"cleartext url allowed",
			summary(t, real, func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "http://gw-plain.c1.example.com" }),
			true,
			"",
		},
		{"model not allowed", summary(t, real, func(s *gossipv1.CapacitySummary) {
			s.Models = append(s.Models, &gossipv1.ModelCapacity{Name: "other"})
		}), false, identity.ReasonModelNotAllowed},
		{"adapter listed", summary(t, real, func(s *gossipv1.CapacitySummary) {
			s.Models[0].Adapters = []*gossipv1.AdapterCapacity{{Name: "llama-sql", ResidentPods: 1}}
		}), false, ""},
		{"adapter not listed", summary(t, real, func(s *gossipv1.CapacitySummary) {
			s.Models[0].Adapters = []*gossipv1.AdapterCapacity{{Name: "llama-sql"}, {Name: "eu-only-model"}}
		}), false, identity.ReasonAdapterNotAllowed},
		{"adapter named as an allowed base model", summary(t, real, func(s *gossipv1.CapacitySummary) {
			s.Models[0].Name = "llama-sql"
			s.Models[0].Adapters = []*gossipv1.AdapterCapacity{{Name: "llama"}}
		}), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cfg := identity.DefaultConfig()
			cfg.AllowCleartext = tt.cleartext
			v, err := identity.New(cfg, s, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			if v.Mode() != identity.ModeStrict {
				t.Fatalf("mode %q, want strict", v.Mode())
			}
			err = v.VerifySummary(tt.summary)
			var rej *identity.RejectedError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("VerifySummary = %v, want accepted", err)
			case tt.want != "" && (!errors.As(err, &rej) || rej.Reason != tt.want || !errors.Is(err, identity.ErrRejected)):
				t.Fatalf("VerifySummary = %v, want reason %s", err, tt.want)
			}
			for _, r := range identity.Reasons {
				got := testutil.ToFloat64(counter(t, reg, "switchyard_router_summaries_rejected_total", r))
				if want := map[bool]float64{true: 1}[r == tt.want]; got != want {
					t.Errorf("rejected{%s} = %v, want %v", r, got, want)
				}
			}
		})
	}
}

// TestInvalidRegistrationRejectsTheCluster: a registration value written straight to etcd that
// does not validate makes the router reject the cluster's summaries (reason
// invalid_registration, logged once), never accept them under the registration it replaced nor
// unchecked in compatibility mode; other clusters are unaffected; fixing the value restores it.
func TestInvalidRegistrationRejectsTheCluster(t *testing.T) {
	s, cli := newStoreClient(t)
	register(t, s, registration())
	var logs syncbuf.Buffer
	reg := prometheus.NewRegistry()
	v, err := identity.New(identity.DefaultConfig(), s, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	signed := summary(t, key(1), nil)
	if err := v.VerifySummary(signed); err != nil {
		t.Fatalf("before: %v", err)
	}
	// The looser value it replaces allowed key 1; the new one is not a registration at all.
	put, err := cli.Put(
		context.Background(),
		configstore.ClusterKey("c1"),
		`{"cluster":"c1","region":"us-east-1","gateway_urls":["https://gw.c1.example.com"],"public_keys":["AAAA"]}`,
	)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { _, ok := s.Snapshot().InvalidRegistration("c1"); return ok },
		"invalid registration watched",
	)
	if v.Mode() != identity.ModeStrict {
		t.Fatalf("mode %q with only an invalid registration stored, want strict", v.Mode())
	}
	for range 5 {
		var rej *identity.RejectedError
		if err := v.VerifySummary(signed); !errors.As(err, &rej) || rej.Reason != identity.ReasonInvalidRegistration {
			t.Fatalf("VerifySummary = %v, want reason %s", err, identity.ReasonInvalidRegistration)
		}
	}
	if got := testutil.ToFloat64(
		counter(t, reg, "switchyard_router_summaries_rejected_total", identity.ReasonInvalidRegistration),
	); got != 5 {
		t.Fatalf("rejected{invalid_registration} = %v, want 5", got)
	}
	if n := strings.Count(logs.String(), "capacity summary rejected"); n != 1 {
		t.Fatalf("logged %d rejections, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "revision "+strconv.FormatInt(put.Header.Revision, 10)) {
		t.Fatalf("the log line does not name the invalid value's revision %d:\n%s", put.Header.Revision, logs.String())
	}
	// Another registered cluster is checked as before.
	other := registration()
	other.Cluster, other.PublicKeys = "c2", [][]byte{pub(key(5))}
	register(t, s, other)
	if err := v.VerifySummary(
		summary(t, key(5), func(x *gossipv1.CapacitySummary) { x.Cluster, x.Node = "c2", "gw-c2-0" }),
	); err != nil {
		t.Fatalf("another cluster: %v", err)
	}
	// Fixed through the API, naming the invalid value's revision.
	if _, err := s.PutRegistration(context.Background(), registration(), put.Header.Revision, true); err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { _, ok := s.Snapshot().Registration("c1"); return ok },
		"fixed registration watched",
	)
	if err := v.VerifySummary(signed); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
}

// counter returns the value of name{label=value} gathered from reg, as a counter.
func counter(t *testing.T, reg *prometheus.Registry, name, value string) prometheus.Counter {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == value {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

// TestModes: with nothing registered every summary is accepted unverified (one warning), unless
// identity is required; the first registration makes every cluster strict.
func TestModes(t *testing.T) {
	s := newStore(t)
	var logs syncbuf.Buffer
	reg := prometheus.NewRegistry()
	v, err := identity.New(identity.DefaultConfig(), s, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	required, err := identity.New(identity.Config{Require: true, LogEvery: time.Minute}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := summary(t, nil, nil)
	if v.Mode() != identity.ModeCompatibility || v.VerifySummary(unsigned) != nil || v.VerifySummary(unsigned) != nil {
		t.Fatalf("compatibility mode (%s) refused an unsigned summary", v.Mode())
	}
	if n := strings.Count(logs.String(), "compatibility mode"); n != 1 {
		t.Fatalf("compatibility warning logged %d times, want once:\n%s", n, logs.String())
	}
	if got := testutil.ToFloat64(counter(t, reg, "switchyard_router_summaries_accepted_total", "unverified")); got != 2 {
		t.Fatalf("accepted{unverified} = %v, want 2", got)
	}
	if required.Mode() != identity.ModeRequired || required.VerifySummary(summary(t, key(1), nil)) == nil {
		t.Fatalf("required mode (%s) accepted a summary with nothing registered", required.Mode())
	}

	if v.Authenticated(summary(t, key(1), nil)) {
		t.Fatal("compatibility mode reports a summary as authenticated")
	}
	other := registration()
	other.Cluster, other.PublicKeys = "c2", [][]byte{pub(key(5))}
	register(t, s, other)
	c2 := summary(t, key(5), func(x *gossipv1.CapacitySummary) { x.Cluster = "c2" })
	if !v.Authenticated(c2) || v.Authenticated(summary(t, nil, func(x *gossipv1.CapacitySummary) { x.Cluster = "c2" })) {
		t.Fatal("strict mode: a signed summary of a registered cluster not authenticated, or an unsigned one authenticated")
	}
	for _, ver := range []*identity.Verifier{v, required} {
		if ver.Mode() != identity.ModeStrict {
			t.Fatalf("mode %q after a registration, want strict", ver.Mode())
		}
		if err := ver.VerifySummary(unsigned); err == nil {
			t.Fatal("strict mode accepted an unsigned summary of an unregistered cluster")
		}
	}
}

// TestRejectionLogsAreRateLimited: one line per node and reason per LogEvery.
func TestRejectionLogsAreRateLimited(t *testing.T) {
	s := newStore(t)
	register(t, s, registration())
	var logs syncbuf.Buffer
	now := time.Unix(1_000, 0)
	cfg := identity.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	v, err := identity.New(cfg, s, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	other := summary(t, nil, func(s *gossipv1.CapacitySummary) { s.Node = "intruder" })
	for range 10 {
		_ = v.VerifySummary(summary(t, nil, nil))
		_ = v.VerifySummary(other)
	}
	if n := strings.Count(logs.String(), "capacity summary rejected"); n != 2 {
		t.Fatalf("logged %d rejections, want 2 (one per node):\n%s", n, logs.String())
	}
	now = now.Add(2 * time.Minute)
	_ = v.VerifySummary(other)
	if n := strings.Count(logs.String(), "capacity summary rejected"); n != 3 {
		t.Fatalf("logged %d rejections after LogEvery, want 3", n)
	}
}

// fakeNode records Revalidate calls.
type fakeNode struct{ calls atomic.Int64 }

func (f *fakeNode) Revalidate() []string { f.calls.Add(1); return nil }

func TestWatchRevalidatesOnRegistrationChanges(t *testing.T) {
	s := newStore(t)
	v, err := identity.New(identity.DefaultConfig(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := &fakeNode{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = identity.Watch{Config: s, Verifier: v, Node: node}.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond)
	if err := s.SetClusterDrain(ctx, "c1", true); err != nil { // not a registration
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().ClusterDrained("c1") }, "drain watched")
	time.Sleep(50 * time.Millisecond)
	if node.calls.Load() != 0 {
		t.Fatalf("Revalidate called %d times for a drain", node.calls.Load())
	}
	register(t, s, registration())
	poll.Until(t, waitTimeout, func() bool { return node.calls.Load() == 1 }, "revalidated after registering")
	if err := s.DeleteRegistration(ctx, "c1", 0); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool { return node.calls.Load() == 2 }, "revalidated after revoking")
}

// FuzzVerifySummary: arbitrary summary bytes never panic the verifier, and nothing but a
// summary signed by a registered key is accepted in strict mode.
func FuzzVerifySummary(f *testing.F) {
	k := key(1)
	for _, s := range []*gossipv1.CapacitySummary{summary(f, k, nil), summary(f, key(3), nil), summary(f, nil, nil)} {
		b, _ := proto.Marshal(s)
		f.Add(b)
	}
	cli := etcdtest.NamespacedClient(f, shared.Endpoints(), etcdtest.UniqueNamespace("identity-fuzz"))
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }() // before the client closes
	if _, err := s.PutRegistration(ctx, registration(), 0, true); err != nil {
		f.Fatal(err)
	}
	poll.Until(f, waitTimeout, func() bool { return s.Snapshot().RegistrationCount() > 0 }, "the registration watched")
	v, err := identity.New(identity.DefaultConfig(), s, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var sum gossipv1.CapacitySummary
		if proto.Unmarshal(b, &sum) != nil {
			return
		}
		if v.VerifySummary(&sum) != nil {
			return
		}
		if gossip.VerifySummary(&sum, pub(k)) != nil && gossip.VerifySummary(&sum, pub(key(2))) != nil {
			t.Fatal("accepted a summary no registered key signed")
		}
	})
}
