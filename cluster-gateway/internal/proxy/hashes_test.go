package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

// longPrompt is a completion body whose prompt (about 20 KB, distinct per i) has a few hundred
// prefix blocks.
func longPrompt(i int, stream bool) string {
	return fmt.Sprintf(
		`{"model":"llama","stream":%t,"prompt":"%d %s"}`,
		stream,
		i,
		strings.Repeat("lorem ipsum dolor ", 1100),
	)
}

// TestPrefixHashesOutliveEveryReader sends concurrent requests with long prompts through the
// gateway; the env's router poisons released hash slices, and its scheduler and hooks compare
// the hashes at every read (first schedule, PreRequest, FirstToken, PostResponse of each
// attempt, scheduling again) with the first ones seen. Hashes released before the request's
// last reader would show changed.
func TestPrefixHashesOutliveEveryReader(t *testing.T) {
	sse := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}
	busy := func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }
	tests := []struct {
		name        string
		handlers    []http.HandlerFunc
		maxAttempts int
		stream      bool
		status      int
	}{
		{"answered streaming", []http.HandlerFunc{sse}, 3, true, http.StatusOK},
		{"fallback after a 503", []http.HandlerFunc{busy, sse}, 3, false, http.StatusOK},
		{"scheduled again after every target failed", []http.HandlerFunc{busy}, 2, false, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ups []string
			for _, h := range tt.handlers {
				ups = append(ups, upstream(t, h))
			}
			e := newEnv(t, func(c *proxy.Config) { c.MaxAttempts = tt.maxAttempts }, ups...)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 5 {
						resp := post(t, e.url+"/v1/completions", longPrompt(10*g+i, tt.stream), nil)
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != tt.status {
							t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
						}
					}
				})
			}
			wg.Wait()
			if reads := e.watch.check(t); reads < 20 {
				t.Fatalf("%d later reads of the hashes compared, want at least one per request", reads)
			}
		})
	}
}
