package frontdoor_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// refuseFirst is a forwarder whose first attempts are refused, all at once: it keeps each
// request's targets and Retarget, and retry asks each for its retry (the first target's URL
// tried) in turn, counting each retry as dispatched to its first target, as the forwarder's
// attempt would, before the next is decided.
type refuseFirst struct {
	table   *clustertable.Table
	mu      sync.Mutex
	first   [][]forward.Target
	again   []forward.Retarget
	retries [][]forward.Target
}

func (f *refuseFirst) Forward(
	w http.ResponseWriter,
	_ *http.Request,
	_ []byte,
	targets []forward.Target,
	again forward.Retarget,
) error {
	f.mu.Lock()
	f.first, f.again = append(f.first, targets), append(f.again, again)
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	return nil
}

func (f *refuseFirst) retry() {
	for i, again := range f.again {
		next := again([]string{f.first[i][0].URL})
		if len(next) > 0 {
			f.table.Dispatched(next[0])
		}
		f.retries = append(f.retries, next)
	}
}

// A retry is decided again when it is made: requests refused by the same cluster spread over
// the others as each retry counts for the next, where the fallback each was given on arrival
// is one and the same; the cluster tried is not offered again.
func TestRetriesAreDecidedAgain(t *testing.T) {
	f := newFleet(
		t,
		clusterSpec{name: "east", region: "us-east-1", kvUsed: 0.1},
		clusterSpec{
			name:   "west",
			region: "us-west-2",
			kvUsed: 0.1,
		},
		clusterSpec{name: "eu", region: "eu-west-1", kvUsed: 0.1},
	)
	tb := clustertable.New(clustertable.Config{Region: "us-east-1",
		RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond, "eu-west-1": 80 * time.Millisecond}}, f, nil)
	fwd := &refuseFirst{table: tb}
	cfg := frontdoor.DefaultConfig()
	cfg.Region = "us-east-1"
	h := frontdoor.New(cfg, tb, policies{}, fwd, nil, nil).Handler()
	// 6,400 prompt tokens: 20 ms of work on a cluster (4 pods at 80,000 tokens/s), twice the
	// round trips' difference.
	body := `{"model":"llama","prompt":"` + strings.Repeat("abcd", 6400) + `"}`
	for range 6 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	fwd.retry()
	got := map[string]int{}
	for i, next := range fwd.retries {
		if first := fwd.first[i]; first[0].Cluster != "east" || len(first) < 2 || first[1].Cluster != "west" {
			t.Fatalf("request %d: first targets %+v, want east then west", i, first)
		}
		if len(next) == 0 {
			t.Fatalf("request %d: no retry target", i)
		}
		for _, tg := range next {
			if tg.Cluster == "east" {
				t.Fatalf("request %d: retry targets %+v offer the cluster tried", i, next)
			}
			if tg.HandBack != 0 {
				t.Fatalf("request %d: retry target %+v carries a hand-back offer", i, tg)
			}
		}
		got[next[0].Cluster]++
	}
	if got["west"] == 0 || got["eu"] == 0 {
		t.Fatalf("retries went to %v, want both west and eu (the fallback fixed on arrival was west for all)", got)
	}
}
