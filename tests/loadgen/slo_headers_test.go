package loadgen_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/loadgentest"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

var requestIndex = regexp.MustCompile(`Request (\d+)\.`)

// TestSLOHeadersSent runs a workload with two SLO classes and checks that every request carries
// exactly its class's headers (none for the rest), that the sample records the class, and that
// the report judges each class by its own objectives: the fake answers in about 50 ms, inside
// the first class's 20 s but outside the second's 1 ms.
func TestSLOHeadersSent(t *testing.T) {
	classes, err := workload.ParseSLOClasses(
		"share=0.5,ttft=20s,tpot=10s,objective=chat;share=0.25,ttft=1ms,priority=-1")
	if err != nil {
		t.Fatal(err)
	}
	f := &loadgentest.Server{TTFT: 50 * time.Millisecond, ITL: time.Millisecond, Tokens: 3}
	var mu sync.Mutex
	got := map[int]http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if m := requestIndex.FindSubmatch(body); m != nil {
			i, _ := strconv.Atoi(string(m[1]))
			mu.Lock()
			got[i] = r.Header.Clone()
			mu.Unlock()
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.Start(t) // initialises the fake's state; its own listener stays unused
	w, err := testWorkload(t, 80, time.Second).WithSLOHeaders(classes)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, loadgen.Config{Workload: w, Seed: 7}, loadgen.Target{Name: "fake", URL: srv.URL})
	want := []map[string]string{
		{"X-Slo-Ttft-Ms": "20000", "X-Slo-Tpot-Ms": "10000", "X-Gateway-Inference-Objective": "chat"},
		{"X-Slo-Ttft-Ms": "1", "X-Switchyard-Priority": "-1"},
	}
	count := make([]int, 3)
	for _, s := range res.Targets[0].Samples {
		if s.SLOClass != w.SLOClassOf(7, s.Index)+1 {
			t.Fatalf("request %d: sample class %d, want %d", s.Index, s.SLOClass, w.SLOClassOf(7, s.Index)+1)
		}
		count[s.SLOClass]++
		h := got[s.Index]
		for _, k := range []string{"X-Slo-Ttft-Ms", "X-Slo-Tpot-Ms", "X-Gateway-Inference-Objective", "X-Switchyard-Priority"} {
			wantV := ""
			if s.SLOClass > 0 {
				wantV = want[s.SLOClass-1][k]
			}
			if h.Get(k) != wantV {
				t.Errorf("request %d (class %d): %s = %q, want %q", s.Index, s.SLOClass, k, h.Get(k), wantV)
			}
		}
	}
	if count[0] == 0 || count[1] == 0 || count[2] == 0 {
		t.Fatalf("requests per class (none, 1, 2) = %v: every class should occur", count)
	}
	rep, err := report.Summarize(res, "")
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Targets[0].Goodput
	if g == nil || len(g.Classes) != 3 {
		t.Fatalf("goodput %+v, want three classes", g)
	}
	if c := g.Classes[0]; c.Sent != count[1] || c.Met != c.Sent {
		t.Errorf("class 1 (20 s): %+v, want all %d within SLO", c, count[1])
	}
	if c := g.Classes[1]; c.Sent != count[2] || c.Met != 0 {
		t.Errorf("class 2 (1 ms): %+v, want none of %d within SLO", c, count[2])
	}
	if c := g.Classes[2]; c.Class != "none" || c.Sent != count[0] || c.Met != c.Sent {
		t.Errorf("requests without headers: %+v, want all %d counted as met (no objective)", c, count[0])
	}
	if g.Requests != count[0]+count[1] {
		t.Errorf("goodput %d requests, want %d", g.Requests, count[0]+count[1])
	}
}
