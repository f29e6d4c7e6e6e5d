package kvevents

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestDecode(t *testing.T) {
	byteHash := []byte{0xaa, 0xbb, 1, 2, 3, 4, 5, 6, 7, 8} // the last 8 bytes are the hash
	tests := []struct {
		name    string
		payload []byte
		want    []Event
		unknown int
		rank    int64
	}{
		{
			name:    "stored and removed",
			payload: encodeBatch(t, nil, stored(1, 2, 3), removed(2)),
			want: []Event{
				{Kind: KindStored, Hashes: []uint64{1, 2, 3}, Tokens: 48, BlockSize: 16},
				{Kind: KindRemoved, Hashes: []uint64{2}},
			},
			rank: -1,
		},
		{
			name: "parent and rank",
			payload: encodeBatch(
				t,
				int64(1),
				ev{tag: tagStored, hashes: []any{uint64(9)}, parent: uint64(1 << 63), tokens: 16, blockSize: 16},
			),
			want: []Event{
				{Kind: KindStored, Hashes: []uint64{9}, Parent: 1 << 63, HasParent: true, Tokens: 16, BlockSize: 16},
			},
			rank: 1,
		},
		{name: "byte hashes", payload: encodeBatch(t, nil, ev{tag: tagRemoved, hashes: []any{byteHash}}),
			want: []Event{{Kind: KindRemoved, Hashes: []uint64{0x0102030405060708}}}, rank: -1},
		{name: "cleared", payload: encodeBatch(t, nil, ev{tag: tagCleared}),
			want: []Event{{Kind: KindCleared}}, rank: -1},
		{
			name: "unknown tag skipped",
			payload: encodeBatch(
				t,
				nil,
				ev{tag: "BlockMoved", trailing: []any{[]any{1, []any{2, map[string]any{"a": 1}}}}},
				removed(7),
			),
			want:    []Event{{Kind: KindRemoved, Hashes: []uint64{7}}},
			unknown: 1,
			rank:    -1,
		},
		{
			name: "future trailing fields skipped",
			payload: encodeBatch(
				t,
				nil,
				ev{tag: tagRemoved, hashes: []any{uint64(5)}, trailing: []any{"GPU", []any{1, 2}, "x"}},
			),
			want: []Event{{Kind: KindRemoved, Hashes: []uint64{5}}},
			rank: -1,
		},
		{
			name:    "nil rank",
			payload: encodeBatch(t, []any(nil), removed(1)),
			want:    []Event{{Kind: KindRemoved, Hashes: []uint64{1}}},
			rank:    -1,
		},
	}
	d := NewDecoder(testLimits())
	var b Batch
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := d.Decode(tc.payload, &b); err != nil {
				t.Fatal(err)
			}
			if len(b.Events) != len(tc.want) || b.Unknown != tc.unknown || b.Rank != tc.rank {
				t.Fatalf(
					"got %d events, %d unknown, rank %d; want %d, %d, %d",
					len(b.Events),
					b.Unknown,
					b.Rank,
					len(tc.want),
					tc.unknown,
					tc.rank,
				)
			}
			for i, w := range tc.want {
				g := b.Events[i]
				if g.Kind != w.Kind || !slices.Equal(g.Hashes, w.Hashes) || g.Parent != w.Parent || g.HasParent != w.HasParent ||
					g.Tokens != w.Tokens ||
					g.BlockSize != w.BlockSize {
					t.Errorf("event %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	nested := func(depth int) []byte {
		var buf bytes.Buffer
		e := msgpack.NewEncoder(&buf)
		_ = e.EncodeArrayLen(2)
		_ = e.EncodeFloat64(1)
		_ = e.EncodeArrayLen(1)
		_ = e.EncodeArrayLen(2)
		_ = e.EncodeString("Unknown")
		for range depth {
			_ = e.EncodeArrayLen(1)
		}
		_ = e.EncodeNil()
		return buf.Bytes()
	}
	many := make([]uint64, 65)
	tests := []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"not an array", []byte{0xc0}},
		{"too many events", encodeBatch(t, nil, slices.Repeat([]ev{removed(1)}, 65)...)},
		{"too many hashes", encodeBatch(t, nil, removed(many...))},
		{"claimed huge array", []byte{0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{
			"stored missing fields",
			encodeBatch(t, nil, ev{tag: tagRemoved + "x"}, ev{tag: tagStored, hashes: []any{uint64(1)}})[:20],
		},
		{"block size out of range", encodeBatch(t, nil, ev{tag: tagStored, hashes: []any{uint64(1)}, blockSize: 0})},
		{"hash of 100 bytes", encodeBatch(t, nil, ev{tag: tagRemoved, hashes: []any{make([]byte, 100)}})},
		{"hash is a float", encodeBatch(t, nil, ev{tag: tagRemoved, hashes: []any{1.5}})},
		{"nested too deep", nested(64)},
		{"trailing bytes", append(encodeBatch(t, nil, removed(1)), 0x01)},
		{"truncated", encodeBatch(t, nil, stored(1, 2, 3))[:30]},
	}
	d := NewDecoder(testLimits())
	var b Batch
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Decode(tc.payload, &b)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode = %v, want ErrMalformed", err)
			}
			if len(b.Events) != 0 {
				t.Errorf("%d events kept from a refused batch", len(b.Events))
			}
		})
	}
	if err := d.Decode(nested(8), &b); err != nil || b.Unknown != 1 {
		t.Errorf("nesting within the bound: err %v, unknown %d", err, b.Unknown)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeBatch(f, nil, stored(1, 2, 3), removed(2)))
	f.Add(encodeBatch(f, int64(2), ev{tag: tagCleared}, ev{tag: "X", trailing: []any{map[string]any{"k": []any{1}}}}))
	f.Add(
		encodeBatch(
			f,
			nil,
			ev{
				tag:       tagStored,
				hashes:    []any{[]byte("0123456789abcdef0123456789abcdef")},
				parent:    []byte("p"),
				tokens:    3,
				blockSize: 16,
			},
		),
	)
	f.Add([]byte{0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff})
	d := NewDecoder(Limits{MaxEvents: 256, MaxHashes: 256})
	x := NewIndex(1 << 16)
	f.Fuzz(func(t *testing.T, payload []byte) {
		var b Batch
		if err := d.Decode(payload, &b); err != nil {
			if len(b.Events) != 0 {
				t.Fatal("events kept from a refused batch")
			}
			return
		}
		for _, e := range b.Events {
			if len(e.Hashes) > 256 || (e.Kind == KindStored && (e.BlockSize < 1 || e.Tokens > 256*64)) {
				t.Fatalf("limits not enforced: %+v", e)
			}
		}
		x.Apply("10.0.0.1:8000", &b)
		if s := x.Stats(); s.Bytes > 1<<16 {
			t.Fatalf("index past its bound: %+v", s)
		}
	})
}
