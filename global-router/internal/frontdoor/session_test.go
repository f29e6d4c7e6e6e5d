package frontdoor_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// postSession posts okBody with the given headers and returns the status and serving cluster.
func postSession(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(contract.HeaderCluster)
}

// saturate republishes f's summaries with cluster's KV cache full.
func saturate(f *fleet, cluster string) {
	old := f.Snapshot()
	sums := make([]gossip.Summary, len(old))
	for i, s := range old {
		s.Summary = proto.Clone(s.Summary).(*gossipv1.CapacitySummary)
		s.Summary.GeneratedAtUnixNano = time.Now().UnixNano()
		if s.Cluster == cluster {
			s.Summary.Models[0].FreeKvTokens = 0
		}
		sums[i] = s
	}
	f.summaries.Store(&sums)
}

// TestSessionAffinity sends a conversation through the router over three equal local clusters:
// every turn lands on the first turn's cluster; once that one is full the session moves and sticks
// to its new cluster. Another tenant's same session id is a session of its own, the body's user
// stands in for the header, and an over-long header is refused 400.
func TestSessionAffinity(t *testing.T) {
	f := newFleet(t, clusterSpec{"east-a", "us-east-1", 0.3, 0}, clusterSpec{"east-b", "us-east-1", 0.3, 0},
		clusterSpec{"east-c", "us-east-1", 0.3, 0})
	reg := prometheus.NewPedanticRegistry()
	url := routerWith(t, f, nil, frontdoor.DefaultConfig().Options, reg)
	turn := func(hdr map[string]string, body string) string {
		t.Helper()
		status, cluster := postSession(t, url, body, hdr)
		if status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
		return cluster
	}
	conv := map[string]string{contract.HeaderSessionID: "conv-1", contract.HeaderTenant: "t1"}
	first := turn(conv, okBody)
	for i := range 15 {
		if got := turn(conv, okBody); got != first {
			t.Fatalf("turn %d served by %s, want %s (the session's cluster, with room)", i+1, got, first)
		}
	}
	saturate(f, first)
	moved := turn(conv, okBody)
	if moved == first {
		t.Fatalf("the session stayed on full %s", first)
	}
	for i := range 10 {
		if got := turn(conv, okBody); got != moved {
			t.Fatalf("turn %d after the move served by %s, want %s", i, got, moved)
		}
	}
	if got := counterValue(t, reg, "switchyard_router_session_decisions_total", "outcome", "moved"); got != 1 {
		t.Fatalf("%g sessions moved, want 1", got)
	}
	turn(map[string]string{contract.HeaderSessionID: "conv-1", contract.HeaderTenant: "t2"}, okBody)
	if got := counterValue(t, reg, "switchyard_router_session_decisions_total", "outcome", "new"); got != 2 {
		t.Fatalf("%g new sessions, want 2 (another tenant's conv-1 is its own)", got)
	}
	user := `{"model":"llama","prompt":"hello there","stream":true,"user":"u-9"}`
	home := turn(nil, user)
	for range 5 {
		if got := turn(nil, user); got != home {
			t.Fatalf("the body's user did not keep its session: %s, want %s", got, home)
		}
	}
	status, _ := postSession(
		t,
		url,
		okBody,
		map[string]string{contract.HeaderSessionID: strings.Repeat("x", contract.MaxSessionID+1)},
	)
	if status != http.StatusBadRequest {
		t.Fatalf("over-long session id: status %d, want 400", status)
	}
}
