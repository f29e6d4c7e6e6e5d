package oracle

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestBodiesMatchLoadgen sends a short workload with loadgen to a server that records the bodies,
// and checks that the oracle encodes the very same bytes for the same requests.
func TestBodiesMatchLoadgen(t *testing.T) {
	for _, name := range []string{"mixed-fleet", "shared-prefix", "multi-lora"} {
		t.Run(name, func(t *testing.T) {
			w, err := workload.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if w, err = w.WithRate(40); err != nil {
				t.Fatal(err)
			}
			if w, err = w.WithDuration(300 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, r.URL.Path+" "+string(body))
				mu.Unlock()
				http.Error(rw, "recorded", http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			cfg := loadgen.DefaultConfig()
			cfg.Workload = w
			if _, err := loadgen.Run(context.Background(), cfg, []loadgen.Target{{Name: "rec", URL: srv.URL}}); err != nil {
				t.Fatal(err)
			}
			reqs, err := workload.Generate(w, w.Seed)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range reqs {
				body, chat, err := encodeRequest(&reqs[i], w.Stream, w.IgnoreEOS)
				if err != nil {
					t.Fatal(err)
				}
				path := "/v1/completions"
				if chat {
					path = "/v1/chat/completions"
				}
				want = append(want, path+" "+string(body))
			}
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(got)
			slices.Sort(want)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("loadgen sent %d bodies, the oracle encodes %d, and they differ", len(got), len(want))
			}
		})
	}
}
