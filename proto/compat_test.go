package proto_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// TestCapacitySummaryKeepsUnknownFields checks the forward-compatibility contract: a node that does
// not know a field added by a newer version keeps it when it decodes and re-encodes the summary
// (as gossip relays do), so newer readers downstream still see it.
func TestCapacitySummaryKeepsUnknownFields(t *testing.T) {
	tests := []struct {
		name   string
		number protowire.Number
		value  []byte
	}{
		{"new top-level string", 100, []byte("from-the-future")},
		{"new top-level bytes", 4242, []byte{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			known := &gossipv1.CapacitySummary{SchemaVersion: 1, Cluster: "c1", Region: "us-east-1", Sequence: 7,
				Models: []*gossipv1.ModelCapacity{{Name: "m", ReadyPods: 2, FreeKvTokens: 1000}}}
			wire, err := proto.Marshal(known)
			if err != nil {
				t.Fatal(err)
			}
			wire = protowire.AppendTag(wire, tt.number, protowire.BytesType)
			wire = protowire.AppendBytes(wire, tt.value)

			var old gossipv1.CapacitySummary
			if err := proto.Unmarshal(wire, &old); err != nil {
				t.Fatal(err)
			}
			if old.GetCluster() != "c1" || old.GetModels()[0].GetFreeKvTokens() != 1000 {
				t.Fatalf("known fields lost: %v", &old)
			}
			relayed, err := proto.Marshal(&old)
			if err != nil {
				t.Fatal(err)
			}
			field := protowire.AppendBytes(protowire.AppendTag(nil, tt.number, protowire.BytesType), tt.value)
			if !bytes.HasSuffix(relayed, field) {
				t.Fatalf("unknown field %d not kept after relay", tt.number)
			}
			if !proto.Equal(&old, mustUnmarshal(t, relayed)) {
				t.Fatal("relayed summary differs from the received one")
			}
		})
	}
}

func mustUnmarshal(t *testing.T, b []byte) *gossipv1.CapacitySummary {
	t.Helper()
	var s gossipv1.CapacitySummary
	if err := proto.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}
