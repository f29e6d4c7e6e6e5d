package extproc_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
)

// TestBodyAssembly sends a body in various chunkings, with and without a (possibly wrong)
// content-length, and checks that the decision announces the body's length and that the body
// comes back unchanged.
func TestBodyAssembly(t *testing.T) {
	e := newEnv(t)
	body := bigBody(200 << 10)
	tests := []struct {
		name          string
		chunks        []int // chunk sizes; the rest of the body is the last chunk
		contentLength int   // 0: no header
	}{
		{"one chunk", nil, 0},
		{"one chunk with content-length", nil, len(body)},
		{"chunks with content-length", []int{100, 64 << 10, 0}, len(body)},
		{"chunks without content-length", []int{64 << 10, 64 << 10}, 0},
		{"content-length too small", []int{1000, 5000}, 3000},
		{"content-length too large", []int{1000}, 2 * len(body)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := e.client.Process(ctx)
			if err != nil {
				t.Fatal(err)
			}
			kv := []string{":method", "POST", ":path", "/v1/completions"}
			if tt.contentLength > 0 {
				kv = append(kv, "content-length", strconv.Itoa(tt.contentLength))
			}
			msgs := []*extprocv3.ProcessingRequest{headersMsg(false, nil, kv...)}
			off := 0
			for _, n := range tt.chunks {
				msgs = append(msgs, bodyMsg(body[off:off+n], false))
				off += n
			}
			msgs = append(msgs, bodyMsg(body[off:], true))
			for _, m := range msgs {
				if err := s.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if got := headerValue(
				r.GetRequestHeaders().GetResponse().GetHeaderMutation(),
				"content-length",
			); got != strconv.Itoa(
				len(body),
			) {
				t.Fatalf("content-length = %q, want %d", got, len(body))
			}
			var back []byte
			for {
				r, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
				back = append(back, sr.GetBody()...)
				if sr.GetEndOfStream() {
					break
				}
			}
			if !bytes.Equal(back, body) {
				t.Fatalf("body came back as %d bytes, sent %d", len(back), len(body))
			}
			_ = s.CloseSend()
		})
	}
}

func TestBufferPool(t *testing.T) {
	p := extproc.NewBufferPoolForTest()
	tests := []struct {
		n, wantCap int
	}{
		{
			0,
			256,
		},
		{1, 256},
		{256, 256},
		{257, 512},
		{65536, 65536},
		{65537, 131072},
		{4 << 20, 4 << 20},
		{4<<20 + 1, 4<<20 + 1},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.n), func(t *testing.T) {
			b := p.Get(tt.n)
			if len(*b) != tt.n || cap(*b) != tt.wantCap {
				t.Fatalf("Get(%d): len %d cap %d, want cap %d", tt.n, len(*b), cap(*b), tt.wantCap)
			}
			p.Put(b)
			again := p.Get(tt.n) // from the pool or new: either way the same size class
			if len(*again) != tt.n || cap(*again) != tt.wantCap {
				t.Fatalf("Get(%d) after Put: len %d cap %d", tt.n, len(*again), cap(*again))
			}
		})
	}
	odd := make([]byte, 100, 300) // not a class size: dropped, never handed out for 300 bytes
	p.Put(&odd)
	if b := p.Get(300); cap(*b) != 512 {
		t.Fatalf("Get(300) cap %d, want 512", cap(*b))
	}
}
