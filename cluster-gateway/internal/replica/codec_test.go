package replica

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

func TestCodecRoundTrip(t *testing.T) {
	h := header{kind: kindLoad, cluster: "c1", sender: "gw-a"}
	loads := []loadEntry{{addr: "10.0.0.1:8000", load: framework.InFlightLoad{Requests: 3, Prefilling: 2,
		PrefillTokens: 900}}, {addr: "10.0.0.2:8000"}}
	msgs := packets(h, 1200, len(loads), func(b []byte, i int) []byte { return appendLoad(b, loads[i]) })
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	gh, d, err := decodeHeader(msgs[0])
	if err != nil || gh != h {
		t.Fatalf("header %+v, %v; want %+v", gh, err, h)
	}
	var got []loadEntry
	if err := decodeLoad(d, func(e loadEntry) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, loads) {
		t.Fatalf("got %+v, want %+v", got, loads)
	}
}

func TestPacketsSplitRoutes(t *testing.T) {
	h := header{kind: kindPrefix, cluster: "c1", sender: "gw-a"}
	long := make([]uint64, 1000)
	for i := range long {
		long[i] = uint64(i + 1)
	}
	routes := splitRoutes([]prefixRoute{{model: "m", addr: "p:1", hashes: long}, {model: "m", addr: "p:2",
		hashes: []uint64{7}}}, 1200)
	msgs := packets(h, 1200, len(routes), func(b []byte, i int) []byte { return appendPrefix(b, routes[i]) })
	var all []uint64
	var addrs []string
	for _, m := range msgs {
		if len(m) > 1200 {
			t.Fatalf("message of %d bytes, limit 1200", len(m))
		}
		_, d, err := decodeHeader(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodePrefix(d, func(r prefixRoute) {
			all = append(all, r.hashes...)
			addrs = append(addrs, r.addr)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(msgs) < 7 || !slices.Equal(all, append(long, 7)) || addrs[len(addrs)-1] != "p:2" {
		t.Fatalf("%d messages carried %d hashes, want the 1001 in order over >= 7 messages", len(msgs), len(all))
	}
}

func TestDecodeRejects(t *testing.T) {
	good := appendHeader(nil, header{kind: kindLoad, cluster: "c", sender: "s"})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad magic", []byte("XX\x01\x01")},
		{"future version", []byte("SR\x02\x01")},
		{"unknown kind", []byte("SR\x01\x09\x01c\x01s")},
		{"name too long", append([]byte("SR\x01\x01\xff\x03"), strings.Repeat("a", 400)...)},
		{"truncated name", []byte("SR\x01\x01\x05ab")},
		{"empty sender", []byte("SR\x01\x01\x01c\x00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := decodeHeader(tt.b); !errors.Is(err, errMalformed) {
				t.Fatalf("err %v, want errMalformed", err)
			}
		})
	}
	entries := []struct {
		name string
		kind byte
		body []byte
	}{
		{"load without figures", kindLoad, []byte("\x03a:1")},
		{"load missing prefill tokens", kindLoad, []byte("\x03a:1\x01\x01")},
		{"load count too large", kindLoad, []byte("\x03a:1\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00")},
		{"load empty address", kindLoad, []byte("\x00\x01\x01\x01")},
		{"prefix count past the end", kindPrefix, []byte("\x01m\x03a:1\x05\x01\x02\x03\x04\x05\x06\x07\x08")},
		{"prefix no blocks", kindPrefix, []byte("\x01m\x03a:1\x00")},
	}
	for _, tt := range entries {
		t.Run(tt.name, func(t *testing.T) {
			b := append(appendHeader(nil, header{kind: tt.kind, cluster: "c", sender: "s"}), tt.body...)
			_, d, err := decodeHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if tt.kind == kindLoad {
				err = decodeLoad(d, func(loadEntry) {})
			} else {
				err = decodePrefix(d, func(prefixRoute) {})
			}
			if !errors.Is(err, errMalformed) {
				t.Fatalf("err %v, want errMalformed", err)
			}
		})
	}
	_ = good
}

// FuzzDecode feeds arbitrary bytes to the decoders (an authenticated peer's, but peers are not
// trusted to be bug-free): they must never panic, and whatever decodes must re-encode to a
// message that decodes to the same entries.
func FuzzDecode(f *testing.F) {
	f.Add(appendLoad(appendHeader(nil, header{kind: kindLoad, cluster: "c", sender: "s"}),
		loadEntry{addr: "a:1", load: framework.InFlightLoad{Requests: 2, Prefilling: 1, PrefillTokens: 5}}))
	f.Add(appendPrefix(appendHeader(nil, header{kind: kindPrefix, cluster: "c", sender: "s"}),
		prefixRoute{model: "m", addr: "a:1", hashes: []uint64{1, 2}}))
	f.Add([]byte("SR\x01\x02\x01c\x01s\x01m"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, d, err := decodeHeader(b)
		if err != nil {
			return
		}
		again := appendHeader(nil, h)
		n := 0
		if h.kind == kindLoad {
			err = decodeLoad(d, func(e loadEntry) {
				if e.load.Requests < 0 || e.load.Prefilling < 0 || e.load.PrefillTokens < 0 || len(e.addr) > maxName {
					t.Fatalf("entry out of range: %+v", e)
				}
				again = appendLoad(again, e)
				n++
			})
		} else {
			err = decodePrefix(d, func(r prefixRoute) {
				if len(r.hashes) == 0 || len(r.model) > maxName {
					t.Fatalf("route out of range: %+v", r)
				}
				again = appendPrefix(again, r)
				n++
			})
		}
		if err != nil {
			return
		}
		_, d2, err := decodeHeader(again)
		if err != nil {
			t.Fatalf("re-encoded header does not decode: %v", err)
		}
		m := 0
		count := func() { m++ }
		if h.kind == kindLoad {
			err = decodeLoad(d2, func(loadEntry) { count() })
		} else {
			err = decodePrefix(d2, func(prefixRoute) { count() })
		}
		if err != nil || m != n {
			t.Fatalf("re-encoded: %d entries, %v; want %d", m, err, n)
		}
	})
}

func TestOutboxDedupAndBound(t *testing.T) {
	o := newOutbox(200)
	if !o.add("m", "p:1", []uint64{1, 2, 3}) || !o.add("m", "p:1", []uint64{1, 2, 3, 4}) {
		t.Fatal("add refused under the limit")
	}
	if !o.add("m", "p:2", []uint64{1, 2}) || !o.add("m", "p:1", []uint64{1, 2}) {
		t.Fatal("add refused under the limit")
	}
	routes := o.take()
	want := [][]uint64{{1, 2, 3}, {4}, {1, 2}}
	if len(routes) != len(want) {
		t.Fatalf("routes %+v, want hashes %v", routes, want)
	}
	for i, r := range routes {
		if !slices.Equal(r.hashes, want[i]) {
			t.Fatalf("route %d: %v, want %v", i, r.hashes, want[i])
		}
	}
	big := make([]uint64, 100)
	for i := range big {
		big[i] = uint64(100 + i)
	}
	if o.add("m", "p:1", big) {
		t.Fatal("an 800-byte route fitted a 200-byte batch")
	}
	if o.memBytes() != 0 || len(o.take()) != 0 {
		t.Fatal("a refused route was queued")
	}
}
