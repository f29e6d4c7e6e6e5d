package gossip_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// BenchmarkSummaryCodec encodes and decodes one capacity summary (20 models of 10 adapters, with
// and without a 2,000-hash prefix sketch) with the gossip codec (protobuf, DEFLATE-compressed
// when that is smaller) and with the standard alternatives: plain protobuf and protobuf JSON.
// bytes/summary is what one summary costs on the wire (before memberlist's encryption), the
// figure the codec is for: every gateway sends its summary to every member.
func BenchmarkSummaryCodec(b *testing.B) {
	codecs := []struct {
		name   string
		encode func(*gossipv1.CapacitySummary) ([]byte, error)
		decode func([]byte) error
	}{
		{"gossip", gossip.EncodeSummary, func(p []byte) error { _, err := gossip.DecodeSummary(p, 1<<20); return err }},
		{"protobuf", func(s *gossipv1.CapacitySummary) ([]byte, error) { return proto.Marshal(s) },
			func(p []byte) error { return proto.Unmarshal(p, new(gossipv1.CapacitySummary)) }},
		{"json", func(s *gossipv1.CapacitySummary) ([]byte, error) { return protojson.Marshal(s) },
			func(p []byte) error { return protojson.Unmarshal(p, new(gossipv1.CapacitySummary)) }},
	}
	for _, sketchItems := range []int{0, 2000} {
		s := stamped(testSummary(20, 10, sketchItems, 1))
		for _, c := range codecs {
			b.Run(fmt.Sprintf("sketch=%d/%s", sketchItems, c.name), func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					p, err := c.encode(s)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.decode(p); err != nil {
						b.Fatal(err)
					}
					n = len(p)
				}
				b.ReportMetric(float64(n), "bytes/summary")
			})
		}
	}
}
