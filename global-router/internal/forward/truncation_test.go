package forward_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// truncations records the Truncator calls.
type truncations struct {
	recorder
	mu       sync.Mutex
	clusters []string
}

func (tr *truncations) Truncated(t forward.Target, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil {
		tr.clusters = append(tr.clusters, t.Cluster)
	}
}

func (tr *truncations) seen() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.clusters...)
}

// A gateway's answer that breaks after its headers (short of its Content-Length, or its stream
// reset) makes Forward return ErrTruncated after the observers heard of it once; the client of
// the router reads an error, over HTTP/1.1 and h2c. A whole answer is no truncation.
func TestTruncatedAnswer(t *testing.T) {
	gw := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/short":
			w.Header().Set("Content-Length", "400")
			fmt.Fprint(w, `{"choices":[`)
			w.(http.Flusher).Flush()
			return
		case "/v1/reset":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"n\":0}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, `{"choices":[]}`)
	})
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	clients := map[string]*http.Client{"http1": {Transport: &http.Transport{}}, "h2c": {Transport: h2}}
	for _, path := range []string{"/v1/short", "/v1/reset", "/v1/whole"} {
		for proto, client := range clients {
			t.Run(path+"/"+proto, func(t *testing.T) {
				obs := &truncations{}
				reg := prometheus.NewRegistry()
				f, err := forward.New(forward.DefaultConfig(), forward.Observers{obs, forward.NewMetrics(reg)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(f.Close)
				url := router(t, f, []forward.Target{{Cluster: "a", URL: gw, Route: "local"}})
				resp, err := client.Post(url+path, "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				whole := path == "/v1/whole"
				switch {
				case whole && (err != nil || string(body) != `{"choices":[]}`):
					t.Fatalf("whole answer: %q, %v", body, err)
				case whole:
				case err == nil:
					t.Fatalf("the truncated answer read as complete: %q", body)
				case proto == "http1" && !errors.Is(err, io.ErrUnexpectedEOF):
					t.Fatalf("read error %v, want io.ErrUnexpectedEOF", err)
				case proto == "h2c" && !strings.Contains(err.Error(), "stream error"):
					t.Fatalf("read error %v, want a reset stream", err)
				}
				want, count := []string{"a"}, "1"
				if whole {
					want, count = nil, "0"
				}
				if got := obs.seen(); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("Truncated heard of %v, want %v", got, want)
				}
				if got := fmt.Sprint(truncatedOf(t, reg)); got != count {
					t.Errorf("switchyard_router_upstream_truncated_total = %s, want %s", got, count)
				}
			})
		}
	}
}

// truncatedOf sums switchyard_router_upstream_truncated_total in reg.
func truncatedOf(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, fam := range families {
		if fam.GetName() == "switchyard_router_upstream_truncated_total" {
			for _, m := range fam.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}
