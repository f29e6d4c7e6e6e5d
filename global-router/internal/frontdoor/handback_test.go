package frontdoor_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// A request kept on a local cluster that is past its throughput (this router's streams wait
// there for a first token) goes with an offer to hand it back, on that cluster's targets only;
// without the backlog no offer is made.
func TestHandBackOfferedOnlyToABackloggedLocalCluster(t *testing.T) {
	f := newFleet(
		t,
		clusterSpec{name: "east", region: "us-east-1", kvUsed: 0.1},
		clusterSpec{name: "west", region: "us-west-2", kvUsed: 0.1},
	)
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond}},
		f,
		nil,
	)
	fwd := &recordTargets{}
	cfg := frontdoor.DefaultConfig()
	cfg.Region = "us-east-1"
	h := frontdoor.New(cfg, tb, policies{}, fwd, nil, nil).Handler()
	send := func() []forward.Target {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(
			rec,
			httptest.NewRequest(
				http.MethodPost,
				"/v1/completions",
				strings.NewReader(`{"model":"llama","prompt":"`+strings.Repeat("abcd", 400)+`"}`),
			),
		)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		fwd.mu.Lock()
		defer fwd.mu.Unlock()
		return fwd.targets[len(fwd.targets)-1]
	}
	ts := send()
	if len(ts) != 2 || ts[0].Cluster != "east" || ts[0].HandBack != 0 || ts[1].HandBack != 0 {
		t.Fatalf("idle home: targets %+v, want east then west, no offer", ts)
	}
	// Two streams per pod (4 pods) accepted by east and waiting for their first token.
	for range 8 {
		target := forward.Target{Cluster: "east", Region: "us-east-1", PromptTokens: 100}
		tb.Dispatched(target)
		tb.Observe(forward.Outcome{Target: target, Status: http.StatusOK, Streamed: true})
	}
	ts = send()
	if len(ts) != 2 || ts[0].Cluster != "east" {
		t.Fatalf("backlogged home: targets %+v, want east kept first", ts)
	}
	// west is 70 ms away: the offer is at least its round trip widened by the near-best window.
	if ts[0].HandBack < 84*time.Millisecond || ts[1].HandBack != 0 {
		t.Fatalf(
			"backlogged home: offers %v and %v, want at least 84ms to east and none to west",
			ts[0].HandBack,
			ts[1].HandBack,
		)
	}
}
