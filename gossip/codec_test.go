package gossip_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func TestSummaryRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		sum  *gossipv1.CapacitySummary
	}{
		{"minimal", &gossipv1.CapacitySummary{Node: "n", Sequence: 1}},
		{"20 models x 10 adapters", stamped(testSummary(20, 10, 0, 3))},
		{"50 models x 20 adapters + sketch", stamped(testSummary(50, 20, 4096, 3))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := gossip.EncodeSummary(tt.sum)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gossip.DecodeSummary(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.sum) {
				t.Error("round trip changed the summary")
			}
			t.Logf("%d bytes encoded (raw protobuf %d)", len(b), proto.Size(tt.sum))
		})
	}
}

func stamped(s *gossipv1.CapacitySummary) *gossipv1.CapacitySummary {
	s.Node, s.Sequence, s.Cluster, s.Region, s.GeneratedAtUnixNano =
		"gw-0", 1796215839947679165, "c1", "us-east-1", 1796215839947679165
	return s
}

func TestDecodeSummaryRejects(t *testing.T) {
	noSeq, _ := gossip.EncodeSummary(&gossipv1.CapacitySummary{Node: "n"})
	big, _ := gossip.EncodeSummary(stamped(testSummary(50, 20, 0, 1)))
	tests := []struct {
		name  string
		b     []byte
		limit int
	}{
		{"empty", nil, 1 << 20},
		{"unknown codec", []byte{9, 1, 2}, 1 << 20},
		{"bad deflate", []byte{1, 0xff, 0xff, 0xff}, 1 << 20},
		{"bad protobuf", []byte{0, 0xff, 0xff}, 1 << 20},
		{"no sequence", noSeq, 1 << 20},
		{"inflates past limit", big, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gossip.DecodeSummary(tt.b, tt.limit); !errors.Is(err, gossip.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func FuzzDecodeSummary(f *testing.F) {
	for _, s := range []*gossipv1.CapacitySummary{stamped(testSummary(2, 2, 64, 1)), {Node: "n", Sequence: 1}} {
		b, _ := gossip.EncodeSummary(s)
		f.Add(b)
		raw, _ := proto.Marshal(s)
		f.Add(append([]byte{0}, raw...))
	}
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := gossip.DecodeSummary(b, 1<<16)
		if err != nil {
			return
		}
		if s.GetNode() == "" || s.GetSequence() == 0 {
			t.Fatal("accepted a summary without node or sequence")
		}
		again, err := gossip.EncodeSummary(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gossip.DecodeSummary(again, 1<<20); err != nil {
			t.Fatalf("re-encoded summary does not decode: %v", err)
		}
	})
}

func BenchmarkEncodeSummary(b *testing.B) {
	s := stamped(testSummary(20, 10, 0, 1))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		out, err := gossip.EncodeSummary(s)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.ReportMetric(float64(n), "bytes/summary")
}

func BenchmarkDecodeSummary(b *testing.B) {
	enc, _ := gossip.EncodeSummary(stamped(testSummary(20, 10, 0, 1)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gossip.DecodeSummary(enc, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
