package gossip_test

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func testDigest() *gossipv1.RegionDigest {
	return &gossipv1.RegionDigest{SchemaVersion: 1, Region: "eu-west-1", Origin: "agg-1", Sequence: 100,
		GeneratedAtUnixNano: 100, Clusters: []*gossipv1.DigestCluster{
			{Cluster: "c1", GatewayUrls: []string{"https://c1.example:8443"}, Node: "gw-c1-0", Sequence: 90, AgeMs: 120,
				Models: []*gossipv1.ModelCapacity{{Name: "m", ReadyPods: 2, TotalKvTokens: 1000, FreeKvTokens: 400}}},
		}}
}

func TestDigestCodec(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(d *gossipv1.RegionDigest)
		wantErr bool
	}{
		{"full", func(*gossipv1.RegionDigest) {}, false},
		{"delta with removal", func(d *gossipv1.RegionDigest) { d.BaseSequence, d.Removed = 50, []string{"c2"} }, false},
		{"no origin", func(d *gossipv1.RegionDigest) { d.Origin = "" }, true},
		{"no region", func(d *gossipv1.RegionDigest) { d.Region = "" }, true},
		{"no sequence", func(d *gossipv1.RegionDigest) { d.Sequence, d.GeneratedAtUnixNano = 0, 0 }, true},
		{"base not below sequence", func(d *gossipv1.RegionDigest) { d.BaseSequence = 100 }, true},
		{"removal in a full digest", func(d *gossipv1.RegionDigest) { d.Removed = []string{"c2"} }, true},
		{"cluster twice", func(d *gossipv1.RegionDigest) { d.Clusters = append(d.Clusters, d.Clusters[0]) }, true},
		{"removed and listed", func(d *gossipv1.RegionDigest) { d.BaseSequence, d.Removed = 50, []string{"c1"} }, true},
		{"cluster without URL", func(d *gossipv1.RegionDigest) { d.Clusters[0].GatewayUrls = nil }, true},
		{"unnamed model", func(d *gossipv1.RegionDigest) { d.Clusters[0].Models[0].Name = "" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDigest()
			tt.edit(d)
			blob, err := gossip.EncodeDigest(d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gossip.DecodeDigest(blob, 1<<20)
			if (err != nil) != tt.wantErr {
				t.Fatalf("DecodeDigest: err %v, want error %v", err, tt.wantErr)
			}
			if err == nil && !proto.Equal(got, d) {
				t.Fatalf("round trip: got %v, want %v", got, d)
			}
			if err != nil && !errors.Is(err, gossip.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		})
	}
}

func TestDigestDecodeLimit(t *testing.T) {
	blob, err := gossip.EncodeDigest(testDigest())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gossip.DecodeDigest(blob, 16); !errors.Is(err, gossip.ErrMalformed) {
		t.Fatalf("DecodeDigest over the limit: %v, want ErrMalformed", err)
	}
}

func TestDigestSignature(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	otherPub, _, _ := ed25519.GenerateKey(nil)
	tests := []struct {
		name string
		edit func(d *gossipv1.RegionDigest)
		pub  ed25519.PublicKey
		want error
	}{
		{"valid", func(*gossipv1.RegionDigest) {}, pub, nil},
		{"other key", func(*gossipv1.RegionDigest) {}, otherPub, gossip.ErrDigestBadSignature},
		{"figure changed", func(d *gossipv1.RegionDigest) { d.Clusters[0].Models[0].FreeKvTokens = 999 }, pub,
			gossip.ErrDigestBadSignature},
		{"region changed", func(d *gossipv1.RegionDigest) { d.Region = "us-east-1" }, pub, gossip.ErrDigestBadSignature},
		{"URL changed", func(d *gossipv1.RegionDigest) { d.Clusters[0].GatewayUrls[0] = "https://evil.example" }, pub,
			gossip.ErrDigestBadSignature},
		{"key id changed", func(d *gossipv1.RegionDigest) { d.SigningKeyId = "00" }, pub, gossip.ErrDigestBadSignature},
		{"unsigned", func(d *gossipv1.RegionDigest) { d.Signature = nil }, pub, gossip.ErrDigestUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDigest()
			if err := gossip.SignDigest(d, key); err != nil {
				t.Fatal(err)
			}
			if d.GetSigningKeyId() != gossip.KeyID(pub) {
				t.Fatalf("key id %q, want %q", d.GetSigningKeyId(), gossip.KeyID(pub))
			}
			tt.edit(d)
			if err := gossip.VerifyDigest(d, tt.pub); !errors.Is(err, tt.want) {
				t.Fatalf("VerifyDigest: %v, want %v", err, tt.want)
			}
		})
	}
}

// A summary signature is never a valid digest signature: the domains differ.
func TestDigestSignatureDomain(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	d := testDigest()
	if err := gossip.SignDigest(d, key); err != nil {
		t.Fatal(err)
	}
	s := &gossipv1.CapacitySummary{Node: "agg-1", Sequence: 100}
	if err := gossip.SignSummary(s, key); err != nil {
		t.Fatal(err)
	}
	d.Signature = s.GetSignature()
	if err := gossip.VerifyDigest(d, pub); !errors.Is(err, gossip.ErrDigestBadSignature) {
		t.Fatalf("VerifyDigest with a summary's signature: %v", err)
	}
}

// FuzzDecodeDigest feeds arbitrary bytes to the digest decoder and the signature check: neither
// may panic, and a digest that decodes re-encodes to one that decodes equal.
func FuzzDecodeDigest(f *testing.F) {
	pub, key, _ := ed25519.GenerateKey(nil)
	d := testDigest()
	_ = gossip.SignDigest(d, key)
	blob, _ := gossip.EncodeDigest(d)
	f.Add(blob)
	d.BaseSequence, d.Removed = 3, []string{"gone"}
	blob, _ = gossip.EncodeDigest(d)
	f.Add(blob)
	f.Add([]byte{0x00})
	f.Add([]byte{0x01, 0xff, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := gossip.DecodeDigest(b, 1<<16)
		if err != nil {
			return
		}
		_ = gossip.VerifyDigest(got, pub)
		again, err := gossip.EncodeDigest(got)
		if err != nil {
			t.Fatal(err)
		}
		back, err := gossip.DecodeDigest(again, 1<<20)
		if err != nil || !proto.Equal(back, got) {
			t.Fatalf("re-encoded digest: %v", err)
		}
	})
}
