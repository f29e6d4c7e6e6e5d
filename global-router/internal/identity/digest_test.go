package identity_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/global-router/internal/identity"
	"github.com/switchyard-dev/switchyard/gossip"
)

// registerRegion stores a region registration and waits until the store's view has it.
func registerRegion(t *testing.T, s *configstore.Store, r *adminv1.RegionRegistration) {
	t.Helper()
	putWatched(t, "region registration",
		func() (*adminv1.RegionRegistration, error) {
			return s.PutRegionRegistration(context.Background(), r, 0)
		},
		func() (*adminv1.RegionRegistration, bool) {
			got, ok := s.Snapshot().RegionRegistration(r.GetRegion())
			return got.Stored, ok
		})
}

// regionDigest returns a digest of us-east-1 listing c1, signed with k (nil: unsigned).
func regionDigest(t testing.TB, k []byte, edit func(*gossipv1.RegionDigest)) *gossipv1.RegionDigest {
	t.Helper()
	d := &gossipv1.RegionDigest{SchemaVersion: 1, Region: "us-east-1", Origin: "agg-1", Sequence: 7,
		GeneratedAtUnixNano: 7, Clusters: []*gossipv1.DigestCluster{digestCluster(nil)}}
	if edit != nil {
		edit(d)
	}
	if k != nil {
		if err := gossip.SignDigest(d, k); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func digestCluster(edit func(*gossipv1.DigestCluster)) *gossipv1.DigestCluster {
	c := &gossipv1.DigestCluster{Cluster: "c1", GatewayUrls: []string{"https://gw.c1.example.com"}, Node: "gw-c1-0",
		Models: []*gossipv1.ModelCapacity{{Name: "llama", ReadyPods: 2}}}
	if edit != nil {
		edit(c)
	}
	return c
}

// TestVerifyDigest: in strict mode a digest is accepted only when a key registered for its
// region verifies it, and of an accepted digest only the clusters registered for that region,
// with registered URLs and models.
func TestVerifyDigest(t *testing.T) {
	s := newStore(t)
	register(t, s, registration())
	regionKey, rogue := key(5), key(9)
	registerRegion(t, s, &adminv1.RegionRegistration{Region: "us-east-1", PublicKeys: [][]byte{pub(regionKey)}})
	reg := prometheus.NewRegistry()
	v, err := identity.New(identity.DefaultConfig(), s, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	digests := []struct {
		name   string
		digest *gossipv1.RegionDigest
		want   string
	}{
		{"signed by the region key", regionDigest(t, regionKey, nil), ""},
		{"unsigned", regionDigest(t, nil, nil), identity.DigestUnsigned},
		{"another key", regionDigest(t, rogue, nil), identity.DigestUnknownKey},
		{"forged key id", func() *gossipv1.RegionDigest {
			d := regionDigest(t, rogue, nil)
			d.SigningKeyId = gossip.KeyID(pub(regionKey))
			return d
		}(), identity.DigestBadSignature},
		{"tampered after signing", func() *gossipv1.RegionDigest {
			d := regionDigest(t, regionKey, nil)
			d.Clusters[0].GatewayUrls[0] = "https://evil.example.com"
			return d
		}(), identity.DigestBadSignature},
		{"unregistered region", regionDigest(t, regionKey, func(d *gossipv1.RegionDigest) { d.Region = "eu-west-1" }),
			identity.DigestUnregisteredRegion},
	}
	for _, tt := range digests {
		t.Run("digest/"+tt.name, func(t *testing.T) {
			before := testutil.ToFloat64(counter(t, reg, "switchyard_router_digests_rejected_total", tt.want))
			err := v.VerifyDigest(tt.digest)
			checkReason(t, err, tt.want)
			if after := testutil.ToFloat64(
				counter(t, reg, "switchyard_router_digests_rejected_total", tt.want),
			); tt.want != "" &&
				after != before+1 {
				t.Fatalf("rejections counted %v → %v", before, after)
			}
		})
	}
	clusters := []struct {
		name    string
		region  string
		cluster *gossipv1.DigestCluster
		want    string
	}{
		{"registered", "us-east-1", digestCluster(nil), ""},
		{"unregistered", "us-east-1", digestCluster(func(c *gossipv1.DigestCluster) { c.Cluster = "c9" }),
			identity.ReasonUnregistered},
		{"other region's digest", "eu-west-1", digestCluster(nil), identity.ReasonRegionMismatch},
		{"unregistered URL", "us-east-1",
			digestCluster(func(c *gossipv1.DigestCluster) { c.GatewayUrls = append(c.GatewayUrls, "https://evil") }),
			identity.ReasonURLMismatch},
		{"cleartext URL", "us-east-1",
			digestCluster(func(c *gossipv1.DigestCluster) { c.GatewayUrls = []string{"http://gw-plain.c1.example.com"} }),
			identity.ReasonCleartextURL},
		{"model not allowed", "us-east-1",
			digestCluster(func(c *gossipv1.DigestCluster) { c.Models[0].Name = "other" }), identity.ReasonModelNotAllowed},
	}
	for _, tt := range clusters {
		t.Run("cluster/"+tt.name, func(t *testing.T) {
			checkReason(t, v.AcceptDigestCluster(tt.region, tt.cluster), tt.want)
		})
	}
}

func checkReason(t *testing.T, err error, want string) {
	t.Helper()
	var rej *identity.RejectedError
	switch {
	case want == "" && err != nil:
		t.Fatalf("rejected: %v", err)
	case want != "" && (!errors.As(err, &rej) || rej.Reason != want):
		t.Fatalf("err %v, want reason %s", err, want)
	}
}

// TestDigestModes: with nothing registered, digests and their clusters are accepted
// unverified; registering only a region makes digests strict.
func TestDigestModes(t *testing.T) {
	s := newStore(t)
	v, err := identity.New(identity.DefaultConfig(), s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyDigest(regionDigest(t, nil, nil)); err != nil {
		t.Fatalf("compatibility mode: %v", err)
	}
	if err := v.AcceptDigestCluster("us-east-1", digestCluster(nil)); err != nil {
		t.Fatalf("compatibility mode: %v", err)
	}
	registerRegion(t, s, &adminv1.RegionRegistration{Region: "us-east-1", PublicKeys: [][]byte{pub(key(5))}})
	checkReason(t, v.VerifyDigest(regionDigest(t, nil, nil)), identity.DigestUnsigned)
	checkReason(t, v.AcceptDigestCluster("us-east-1", digestCluster(nil)), identity.ReasonUnregistered)
	if v.Mode() != identity.ModeCompatibility {
		t.Fatalf("summary identity mode %s: a region registration alone must not refuse the region's summaries",
			v.Mode())
	}
}

// FuzzVerifyDigest feeds arbitrary bytes through the digest decoder and the router's checks:
// none may panic, and nothing that is not signed by the region key is accepted.
func FuzzVerifyDigest(f *testing.F) {
	regionKey := key(5)
	seed, _ := gossip.EncodeDigest(regionDigest(f, regionKey, nil))
	f.Add(seed)
	forged, _ := gossip.EncodeDigest(regionDigest(f, key(9), nil))
	f.Add(forged)
	f.Add([]byte{0})
	cli := etcdtest.NamespacedClient(f, shared.Endpoints(), etcdtest.UniqueNamespace("identity-digest-fuzz"))
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }() // before the client closes
	if _, err := s.PutRegionRegistration(ctx, &adminv1.RegionRegistration{Region: "us-east-1",
		PublicKeys: [][]byte{pub(regionKey)}}, 0); err != nil {
		f.Fatal(err)
	}
	poll.Until(f, waitTimeout, func() bool { return s.Snapshot().RegionRegistrationCount() > 0 },
		"the region registration watched")
	v, err := identity.New(identity.DefaultConfig(), s, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := gossip.DecodeDigest(b, 1<<16)
		if err != nil {
			return
		}
		if v.VerifyDigest(d) == nil && gossip.VerifyDigest(d, pub(regionKey)) != nil {
			t.Fatalf("accepted a digest the region key does not verify: %v", d)
		}
		for _, c := range d.GetClusters() {
			_ = v.AcceptDigestCluster(d.GetRegion(), c)
		}
	})
}
