package gossip_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// testSigningKey returns a fixed Ed25519 key for seed byte b.
func testSigningKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

func signedTestSummary(t testing.TB, key ed25519.PrivateKey) *gossipv1.CapacitySummary {
	t.Helper()
	s := &gossipv1.CapacitySummary{
		SchemaVersion: gossip.SchemaVersion, Cluster: "c1", Region: "us-east-1", GatewayUrl: "https://gw.c1.test",
		Node: "gw-c1-0", Sequence: 1_700_000_000_000_000_000, GeneratedAtUnixNano: 1_700_000_000_000_000_000,
		Models: []*gossipv1.ModelCapacity{{Name: "llama", ReadyPods: 3, FreeKvTokens: 1000, TotalKvTokens: 4000,
			Adapters: []*gossipv1.AdapterCapacity{{Name: "sql", ResidentPods: 1}}}},
		PrefixSketch: &gossipv1.PrefixSketch{Bits: []byte{1, 2, 3}, NumBits: 24, NumHashes: 2},
	}
	if err := gossip.SignSummary(s, key); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifySummary(t *testing.T) {
	key, other := testSigningKey(1), testSigningKey(2)
	pub := key.Public().(ed25519.PublicKey)
	tests := []struct {
		name   string
		mutate func(s *gossipv1.CapacitySummary)
		pub    ed25519.PublicKey
		want   error
	}{
		{"signed", func(*gossipv1.CapacitySummary) {}, pub, nil},
		{"other key", func(*gossipv1.CapacitySummary) {}, other.Public().(ed25519.PublicKey), gossip.ErrBadSignature},
		{"unsigned", func(s *gossipv1.CapacitySummary) { s.Signature = nil }, pub, gossip.ErrUnsigned},
		{
			"gateway url changed",
			func(s *gossipv1.CapacitySummary) { s.GatewayUrl = "http://intruder.test" },
			pub,
			gossip.ErrBadSignature,
		},
		{"region changed", func(s *gossipv1.CapacitySummary) { s.Region = "eu-west-1" }, pub, gossip.ErrBadSignature},
		{"sequence raised", func(s *gossipv1.CapacitySummary) { s.Sequence = ^uint64(0) }, pub, gossip.ErrBadSignature},
		{"figure changed", func(s *gossipv1.CapacitySummary) { s.Models[0].FreeKvTokens++ }, pub, gossip.ErrBadSignature},
		{"adapter added", func(s *gossipv1.CapacitySummary) {
			s.Models[0].Adapters = append(s.Models[0].Adapters, &gossipv1.AdapterCapacity{Name: "x"})
		}, pub, gossip.ErrBadSignature},
		{
			"key id changed",
			func(s *gossipv1.CapacitySummary) { s.SigningKeyId = "0000000000000000" },
			pub,
			gossip.ErrBadSignature,
		},
		{
			"signature truncated",
			func(s *gossipv1.CapacitySummary) { s.Signature = s.Signature[:10] },
			pub,
			gossip.ErrBadSignature,
		},
		{"short public key", func(*gossipv1.CapacitySummary) {}, pub[:16], gossip.ErrBadSignature},
		{"field added after signing", func(s *gossipv1.CapacitySummary) {
			s.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 99, protowire.BytesType), []byte("x")))
		}, pub, gossip.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := signedTestSummary(t, key)
			tt.mutate(s)
			if err := gossip.VerifySummary(s, tt.pub); !errors.Is(err, tt.want) {
				t.Fatalf("VerifySummary = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSignatureSurvivesRelayAndNewerFields: a summary that went through the codec (as relays
// and push/pull carry it) still verifies, and so does one signed with a field this version does
// not know, once decoded and re-encoded by this version (unknown fields are kept).
func TestSignatureSurvivesRelayAndNewerFields(t *testing.T) {
	key := testSigningKey(3)
	pub := key.Public().(ed25519.PublicKey)
	s := signedTestSummary(t, key)
	s.Signature = nil
	s.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 40, protowire.BytesType), []byte("future")))
	if err := gossip.SignSummary(s, key); err != nil {
		t.Fatal(err)
	}
	blob, err := gossip.EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gossip.DecodeSummary(blob, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := gossip.VerifySummary(got, pub); err != nil {
		t.Fatalf("relayed summary: %v", err)
	}
	if got.GetSigningKeyId() != gossip.KeyID(pub) || len(gossip.KeyID(pub)) != 16 {
		t.Fatalf("key id %q, want %q (16 hex digits)", got.GetSigningKeyId(), gossip.KeyID(pub))
	}
	if !proto.Equal(got, s) {
		t.Fatal("summary changed through the codec")
	}
}

func TestParseSigningAndPublicKeys(t *testing.T) {
	key := testSigningKey(4)
	pub := key.Public().(ed25519.PublicKey)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkix, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}))
	t.Run("signing", func(t *testing.T) {
		tests := []struct {
			name, in string
			ok       bool
		}{
			{"pem", privPEM, true},
			{"pem with whitespace", "\n  " + privPEM + "\n\n", true},
			{"base64 seed", base64.StdEncoding.EncodeToString(key.Seed()) + "\n", true},
			{"short seed", base64.StdEncoding.EncodeToString(key.Seed()[:31]), false},
			{"public key pem", pubPEM, false},
			{"garbage", "not a key", false},
			{"empty", "", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := gossip.ParseSigningKey([]byte(tt.in))
				if (err == nil) != tt.ok {
					t.Fatalf("err = %v, want ok %v", err, tt.ok)
				}
				if tt.ok && !got.Equal(key) {
					t.Fatal("parsed a different key")
				}
			})
		}
	})
	t.Run("public", func(t *testing.T) {
		tests := []struct {
			name, in string
			ok       bool
		}{
			{"pem", pubPEM, true},
			{"base64 raw", " " + base64.StdEncoding.EncodeToString(pub) + "\n", true},
			{"private key pem", privPEM, false},
			{"short", base64.StdEncoding.EncodeToString(pub[:20]), false},
			{"garbage", strings.Repeat("x", 44), false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := gossip.ParsePublicKey([]byte(tt.in))
				if (err == nil) != tt.ok {
					t.Fatalf("err = %v, want ok %v", err, tt.ok)
				}
				if tt.ok && !got.Equal(pub) {
					t.Fatal("parsed a different key")
				}
			})
		}
	})
}

// FuzzVerifySummary feeds arbitrary blobs to the decoder and the verifier: nothing panics, a
// decoded summary that is not signed by the key never verifies, and once signed it verifies,
// also after another trip through the codec.
func FuzzVerifySummary(f *testing.F) {
	key := testSigningKey(5)
	pub := key.Public().(ed25519.PublicKey)
	for _, seed := range []*gossipv1.CapacitySummary{signedTestSummary(f, key), signedTestSummary(f, testSigningKey(6)),
		{Node: "n", Sequence: 1, Signature: []byte("junk"), SigningKeyId: "x"}} {
		b, err := gossip.EncodeSummary(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := gossip.DecodeSummary(b, 1<<16)
		if err != nil {
			return
		}
		if err := gossip.VerifySummary(s, pub); err == nil {
			// Only a summary this key signed verifies; the seeds hold one. Any other input that
			// verifies must still verify after re-signing (same bytes).
			sig := append([]byte(nil), s.GetSignature()...)
			if err := gossip.SignSummary(s, key); err != nil {
				t.Fatal(err)
			}
			if string(sig) != string(s.GetSignature()) {
				t.Fatal("a verified signature differs from the key's own (Ed25519 is deterministic)")
			}
		}
		if err := gossip.SignSummary(s, key); err != nil {
			t.Fatal(err)
		}
		if err := gossip.VerifySummary(s, pub); err != nil {
			t.Fatalf("freshly signed summary: %v", err)
		}
		again, err := gossip.EncodeSummary(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := gossip.DecodeSummary(again, 1<<20)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if err := gossip.VerifySummary(back, pub); err != nil {
			t.Fatalf("signed summary after the codec: %v", err)
		}
	})
}
