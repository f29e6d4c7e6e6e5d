package forward_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// firstTokens records outcomes and first tokens in the order they arrive.
type firstTokens struct {
	mu     sync.Mutex
	events []string // "observe streamed=<bool>" or "first"
	first  chan struct{}
}

func (f *firstTokens) Observe(o forward.Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Streamed {
		f.events = append(f.events, "observe streamed")
	} else {
		f.events = append(f.events, "observe plain")
	}
}

func (f *firstTokens) FirstToken(forward.Target) {
	f.mu.Lock()
	f.events = append(f.events, "first")
	f.mu.Unlock()
	f.first <- struct{}{}
}

func (f *firstTokens) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// streamGateway starts a gateway answering /v1/plain with JSON, /v1/empty with an event stream
// that ends without a token, and any other path with an event stream whose headers leave at
// once and whose first token follows when before returns.
func streamGateway(t *testing.T, before func()) string {
	t.Helper()
	return gateway(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/plain":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
		case "/v1/empty":
			w.Header().Set("Content-Type", "text/event-stream")
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			before()
			_, _ = io.WriteString(w, "data: {\"n\":0}\n\ndata: [DONE]\n\n")
		}
	})
}

// FirstToken follows the Outcome of every accepted stream exactly once: when its first body
// bytes arrive (not with the headers), or when it ends without any. A plain answer gets none.
func TestFirstTokenOfStreams(t *testing.T) {
	release := make(chan struct{})
	gw := streamGateway(t, func() { <-release })
	tests := []struct {
		path    string
		release bool
		want    []string
	}{
		{"/v1/completions", true, []string{"observe streamed", "first"}},
		{"/v1/empty", false, []string{"observe streamed", "first"}},
		{"/v1/plain", false, []string{"observe plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			obs := &firstTokens{first: make(chan struct{}, 4)}
			f, err := forward.New(forward.DefaultConfig(), forward.Observers{obs})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Close)
			done := make(chan error, 1)
			go func() {
				r := httptest.NewRequest(http.MethodPost, tt.path, nil)
				done <- f.Forward(httptest.NewRecorder(), r, nil, []forward.Target{{Cluster: "a", URL: gw}}, nil)
			}()
			if tt.release {
				poll.Until(t, 10*time.Second, func() bool { return len(obs.seen()) > 0 }, "the outcome event")
				time.Sleep(20 * time.Millisecond) // headers are in; the first token is not
				if got := obs.seen(); len(got) != 1 {
					t.Fatalf("before the first token: %v, want only the outcome", got)
				}
				release <- struct{}{}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := obs.seen()
			if len(got) != len(tt.want) {
				t.Fatalf("events %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("events %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// dispatches records attempts as they begin and end.
type dispatches struct {
	mu       sync.Mutex
	begun    []string
	outcomes []forward.Outcome
}

func (d *dispatches) Dispatched(t forward.Target) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.begun = append(d.begun, t.Cluster)
}

func (d *dispatches) Observe(o forward.Outcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.outcomes = append(d.outcomes, o)
}

// Every attempt is announced before it is sent and observed once after; a client that leaves
// while the gateway has not answered abandons the attempt (not a failure of the cluster) and no
// other cluster is tried for it.
func TestDispatchedAndAbandoned(t *testing.T) {
	slow := gateway(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	spare := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	refuse := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })

	tests := []struct {
		name      string
		targets   []forward.Target
		cancel    time.Duration // 0: the client stays
		wantBegun []string
		abandoned []bool
	}{
		{"refused, then answered", []forward.Target{{Cluster: "full", URL: refuse}, {Cluster: "ok", URL: spare}}, 0,
			[]string{"full", "ok"}, []bool{false, false}},
		{
			"client leaves while waiting",
			[]forward.Target{{Cluster: "slow", URL: slow}, {Cluster: "ok", URL: spare}},
			50 * time.Millisecond,
			[]string{"slow"},
			[]bool{true},
		},
		{
			"client leaves during the delay",
			[]forward.Target{{Cluster: "far", URL: spare, Delay: time.Minute}, {Cluster: "ok", URL: spare}},
			50 * time.Millisecond,
			[]string{"far"},
			[]bool{true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &dispatches{}
			f, err := forward.New(forward.DefaultConfig(), forward.Observers{rec, forward.NewMetrics(nil)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Close)
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
			if tt.cancel > 0 {
				ctx, cancel := context.WithTimeout(r.Context(), tt.cancel)
				defer cancel()
				r = r.WithContext(ctx)
			}
			ferr := f.Forward(httptest.NewRecorder(), r, nil, tt.targets, nil)
			if (ferr != nil) != (tt.cancel > 0) {
				t.Fatalf("Forward: %v", ferr)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if fmt.Sprint(rec.begun) != fmt.Sprint(tt.wantBegun) || len(rec.outcomes) != len(tt.wantBegun) {
				t.Fatalf("begun %v, %d outcomes; want %v, one outcome each", rec.begun, len(rec.outcomes), tt.wantBegun)
			}
			for i, o := range rec.outcomes {
				if o.Target.Cluster != tt.wantBegun[i] || o.Abandoned != tt.abandoned[i] {
					t.Errorf(
						"outcome %d: %s abandoned %v, want %s %v",
						i,
						o.Target.Cluster,
						o.Abandoned,
						tt.wantBegun[i],
						tt.abandoned[i],
					)
				}
			}
		})
	}
}
