package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

// longPrompt is a completion body whose prompt (about 20 KB, distinct per i) has a few hundred
// prefix blocks.
func longPrompt(i int, stream bool) string {
	return fmt.Sprintf(`{"model":"llama","stream":%t,"prompt":"%d %s"}`, stream, i, strings.Repeat("lorem ipsum dolor ", 1100))
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

// capturing is a scheduler that keeps the hash slice of the last request it saw (as a
// careless consumer would) and answers with its endpoints, or err.
type capturing struct {
	eps    []framework.Endpoint
	err    error
	hashes []uint64
}

func (c *capturing) Schedule(_ context.Context, req *framework.Request) (*framework.Result, error) {
	c.hashes = req.PrefixHashes
	if c.err != nil {
		return nil, c.err
	}
	return &framework.Result{Targets: c.eps}, nil
}

// TestDoneReleasesPrefixHashes checks the release points: a refused request's hashes are
// released by Decide, an admitted one's by Done, and a slice kept past its release reads as
// poison (so the checks above would see a read after release).
func TestDoneReleasesPrefixHashes(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"admitted, then done", nil, 0},
		{"refused by the scheduler", errSaturated, http.StatusTooManyRequests},
		{"no endpoint", fmt.Errorf("no endpoint"), http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pipe, sched := capturePipeline(t, tt.err)
			get := func(string) string { return "" }
			d, apiErr := pipe.Decide(context.Background(), []byte(longPrompt(1, false)), get, nil)
			if tt.status != 0 {
				if apiErr == nil || apiErr.Status != tt.status {
					t.Fatalf("error %v, want status %d", apiErr, tt.status)
				}
			} else {
				if apiErr != nil {
					t.Fatal(apiErr)
				}
				if len(d.Request.PrefixHashes) < 300 || d.Request.PrefixHashes[0] == bbr.PoisonHash {
					t.Fatalf("%d hashes before Done", len(d.Request.PrefixHashes))
				}
				pipe.Done(d)
				if d.Request.PrefixHashes != nil {
					t.Fatal("request still refers to its hashes after Done")
				}
			}
			if len(sched.hashes) < 300 {
				t.Fatalf("scheduler saw %d hashes", len(sched.hashes))
			}
			for i, h := range sched.hashes {
				if h != bbr.PoisonHash {
					t.Fatalf("hash %d = %#x after release, want poison", i, h)
				}
			}
		})
	}
}

// capturePipeline is a Pipeline over a poisoning router and a capturing scheduler failing
// with err (flow control off: saturation is refused at once).
func capturePipeline(t *testing.T, err error) (*proxy.Pipeline, *capturing) {
	t.Helper()
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:8000"}})
	for _, ep := range store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama"})
	}
	sched := &capturing{eps: store.View().Endpoints(), err: err}
	router, rerr := bbr.NewRouter(bbr.DefaultConfig(), store)
	if rerr != nil {
		t.Fatal(rerr)
	}
	router.PoisonReleasedHashes()
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	flow, ferr := flowcontrol.New(fcfg, sched, flowcontrol.Options{IsSaturated: func(e error) bool { return e == errSaturated }})
	if ferr != nil {
		t.Fatal(ferr)
	}
	m, merr := proxy.NewMetrics(nil)
	if merr != nil {
		t.Fatal(merr)
	}
	pipe, perr := proxy.NewPipeline(proxy.PipelineOptions{Router: router, Flow: flow, Classify: fcfg, Metrics: m})
	if perr != nil {
		t.Fatal(perr)
	}
	return pipe, sched
}
