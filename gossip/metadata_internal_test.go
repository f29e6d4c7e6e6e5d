package gossip

import "testing"

// Version 2 metadata advertises this package's features; version 1 metadata, as nodes before
// features wrote it, none.
func TestMetadataFeatures(t *testing.T) {
	b, err := encodeMetadata(Metadata{Role: RoleRouter, Region: "r1", Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    []byte
		want features
	}{
		{"this version", b, ownFeatures},
		{"version 1", []byte{1, 2, 0, 2, 'r', '1', 0, 0}, 0},
		{"a later version appending more", []byte{3, 2, 0, 2, 'r', '1', 0, 0, 0x03, 9, 9}, 0x03},
		{"a later version without features", []byte{3, 2, 0, 2, 'r', '1', 0, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, f, err := decodeMetadata(tt.b)
			if err != nil || f != tt.want || m.Role != RoleRouter || m.Region != "r1" {
				t.Errorf("decodeMetadata = %+v, %#x, %v; want a router in r1 with features %#x", m, f, err, tt.want)
			}
		})
	}
	if ownFeatures&featureCompactDeltas == 0 {
		t.Error("this version does not advertise the compact deltas it writes")
	}
}
