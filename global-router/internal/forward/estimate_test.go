package forward_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// The router's estimate for the cluster that answered is compared with the time to first token
// it measured, by route: a retry is counted as a retry, from its own attempt's start; a plain
// answer, a stream that ends without a token and a target without an estimate are not counted.
func TestEstimateRatioByRoute(t *testing.T) {
	const tokenAfter = 60 * time.Millisecond
	gw := streamGateway(t, func() { time.Sleep(tokenAfter) })
	full := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	reg := prometheus.NewPedanticRegistry()
	f, err := forward.New(forward.DefaultConfig(), forward.Observers{&recorder{}, forward.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	send := func(path string, targets ...forward.Target) {
		t.Helper()
		if err := f.Forward(
			httptest.NewRecorder(),
			httptest.NewRequest(http.MethodPost, path, nil),
			nil,
			targets,
			nil,
		); err != nil {
			t.Fatal(err)
		}
	}
	short := 20 * time.Millisecond // the token comes at least 3 times later
	send("/v1/completions", forward.Target{Cluster: "a", URL: gw, Route: "local", Estimate: short})
	// The first cluster refuses; the second answers as a retry, whatever route it was chosen for.
	send("/v1/completions", forward.Target{Cluster: "a", URL: full, Route: "local", Estimate: short},
		forward.Target{Cluster: "b", URL: gw, Route: "overflow", Estimate: time.Hour})
	send("/v1/plain", forward.Target{Cluster: "a", URL: gw, Route: "overflow", Estimate: short})
	send("/v1/empty", forward.Target{Cluster: "a", URL: gw, Route: "overflow", Estimate: short})
	send("/v1/completions", forward.Target{Cluster: "a", URL: gw, Route: "overflow"})

	got := map[string]map[float64]uint64{} // route → cumulative count by upper bound
	counts := map[string]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_router_ttft_estimate_ratio" {
			continue
		}
		for _, m := range mf.GetMetric() {
			route := m.GetLabel()[0].GetValue()
			got[route] = map[float64]uint64{}
			for _, b := range m.GetHistogram().GetBucket() {
				got[route][b.GetUpperBound()] = b.GetCumulativeCount()
			}
			counts[route] = m.GetHistogram().GetSampleCount()
		}
	}
	if len(counts) != 2 || counts["local"] != 1 || counts["retry"] != 1 {
		t.Fatalf("samples by route %v, want one local stream and one retry", counts)
	}
	if got["local"][2] != 0 {
		t.Errorf(
			"local ratio buckets %v: want the sample above 2 (a %v token against a %v estimate)",
			got["local"],
			tokenAfter,
			short,
		)
	}
	if got["retry"][0.25] != 1 {
		t.Errorf(
			"retry ratio buckets %v: want the sample below 0.25 (a %v token against an estimate of an hour)",
			got["retry"],
			tokenAfter,
		)
	}
}
