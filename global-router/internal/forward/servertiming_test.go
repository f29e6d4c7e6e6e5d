package forward_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

func TestGatewayTime(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"plain", []string{"gateway;dur=12.5"}, 12500 * time.Microsecond, true},
		{"case and spaces", []string{" Gateway ; DUR = 3 "}, 3 * time.Millisecond, true},
		{"among others", []string{`db;dur=53, gateway;desc="a, b";dur=7, app;dur=47.2`}, 7 * time.Millisecond, true},
		{"last wins across values", []string{"gateway;dur=1", "cache;desc=hit", "gateway;dur=2"}, 2 * time.Millisecond, true},
		{"quoted dur", []string{`gateway;dur="4"`}, 4 * time.Millisecond, true},
		{"other metric only", []string{"router;dur=9"}, 0, false},
		{"prefix of the name", []string{"gatewayx;dur=9"}, 0, false},
		{"no dur", []string{"gateway;desc=x"}, 0, false},
		{"negative", []string{"gateway;dur=-1"}, 0, false},
		{"not a number", []string{"gateway;dur=abc"}, 0, false},
		{"NaN", []string{"gateway;dur=NaN"}, 0, false},
		{"absurd", []string{"gateway;dur=1e300"}, 0, false},
		{"unterminated quote", []string{`x;desc="a, gateway;dur=5`}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("Server-Timing", v)
			}
			got, ok := forward.GatewayTime(h)
			if got != tt.want || ok != tt.ok {
				t.Errorf("GatewayTime(%q) = %v, %v; want %v, %v", tt.values, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzGatewayTime(f *testing.F) {
	for _, s := range []string{"gateway;dur=1.5", `a;desc="x,\"y";dur=2, gateway;dur=3`, ",,;;==", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := forward.GatewayTime(http.Header{"Server-Timing": {v}})
		if d < 0 || (!ok && d != 0) || d > 24*time.Hour {
			t.Fatalf("GatewayTime(%q) = %v, %v", v, d, ok)
		}
	})
}

// The round trip measured on an attempt is its time to the headers less what the gateway says it
// spent: a gateway that takes 150 ms itself behind 80 ms of (simulated) network measures ~80 ms.
func TestAttemptMeasuresRTT(t *testing.T) {
	const gwTime, netDelay = 150 * time.Millisecond, 80 * time.Millisecond
	url := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		time.Sleep(gwTime)
		w.Header().Set("Server-Timing", fmt.Sprintf("gateway;dur=%.3f", float64(time.Since(start).Microseconds())/1000))
		fmt.Fprint(w, "ok")
	})
	silent := gateway(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	rec := &recorder{}
	f := newForwarder(t, rec)
	for _, target := range []forward.Target{
		{Cluster: "timed", URL: url, Route: "local", Delay: netDelay},
		{Cluster: "silent", URL: silent, Route: "local"},
	} {
		resp, err := http.Post(router(t, f, []forward.Target{target}), "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Server-Timing"); target.Cluster == "timed" && got == "" {
			t.Error("the gateway's Server-Timing did not reach the client")
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.out) != 2 {
		t.Fatalf("%d outcomes, want 2", len(rec.out))
	}
	timed, silentOut := rec.out[0], rec.out[1]
	if timed.TTFB < gwTime+netDelay {
		t.Errorf("TTFB %v, want at least gateway time + delay %v", timed.TTFB, gwTime+netDelay)
	}
	// Loopback and scheduling add a little; the gateway's own 150 ms must not be counted.
	if timed.RTT < netDelay || timed.RTT > netDelay+gwTime/2 {
		t.Errorf("RTT %v, want about the %v delay", timed.RTT, netDelay)
	}
	if silentOut.RTT != 0 {
		t.Errorf("a gateway without Server-Timing measured RTT %v, want 0 (unknown)", silentOut.RTT)
	}
}

func TestMetricsCountAttemptsByResult(t *testing.T) {
	refuse := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	ok := gateway(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	reg := prometheus.NewPedanticRegistry()
	f, err := forward.New(forward.DefaultConfig(), forward.Observers{&recorder{}, forward.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	targets := []forward.Target{
		{Cluster: "dead", URL: "http://" + closedAddr(t)},
		{Cluster: "full", URL: refuse},
		{Cluster: "ok", URL: ok},
	}
	resp, err := http.Post(router(t, f, targets), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `# HELP switchyard_router_attempts_total Attempts to forward a request to a cluster's gateway, by cluster and result (answered, refused: tried the next candidate, error: no answer, abandoned: the client went away first, handed_back: the gateway gave back a request the router offered to take elsewhere).
# TYPE switchyard_router_attempts_total counter
switchyard_router_attempts_total{cluster="dead",result="error"} 1
switchyard_router_attempts_total{cluster="full",result="refused"} 1
switchyard_router_attempts_total{cluster="ok",result="answered"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_attempts_total"); err != nil {
		t.Error(err)
	}
}
