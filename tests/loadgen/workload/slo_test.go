package workload_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

func TestParseSLOClasses(t *testing.T) {
	minus1 := -1
	for _, tc := range []struct {
		spec string
		want []workload.SLOClass
		err  string
	}{
		{"ttft=1s,tpot=25ms", []workload.SLOClass{{Share: 1, TTFT: time.Second, TPOT: 25 * time.Millisecond}}, ""},
		{
			"share=0.5,ttft=1s;ttft=2s,priority=-1;objective=batch",
			[]workload.SLOClass{
				{Share: 0.5, TTFT: time.Second},
				{Share: 0.25, TTFT: 2 * time.Second, Priority: &minus1},
				{Share: 0.25, Objective: "batch"},
			},
			"",
		},
		{"share=0.7,ttft=1s;share=0.6,ttft=1s", nil, "above 1"},
		{"share=0,ttft=1s", nil, "share"},
		{"ttft=-1s", nil, "ttft"},
		{"tpot=2h", nil, "tpot"},
		{"share=0.5", nil, "set at least one"},
		{"objective=a b", nil, "objective"},
		{"ttft=1s,colour=red", nil, "unknown key"},
		{"ttft", nil, "KEY=VALUE"},
		{"priority=high", nil, "priority"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := workload.ParseSLOClasses(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].String() != tc.want[i].String() {
					t.Errorf("class %d = %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestSLOClassOfShares checks that the classes are drawn in their shares, the same for the same
// seed and index, and differently for another seed.
func TestSLOClassOfShares(t *testing.T) {
	classes, err := workload.ParseSLOClasses("share=0.6,ttft=1s;share=0.3,ttft=2s")
	if err != nil {
		t.Fatal(err)
	}
	w := &workload.Workload{SLOHeaders: classes}
	const n = 20000
	count := map[int]int{}
	same := 0
	for i := range n {
		c := w.SLOClassOf(1, i)
		if c != w.SLOClassOf(1, i) {
			t.Fatalf("request %d drew two classes", i)
		}
		if c == w.SLOClassOf(2, i) {
			same++
		}
		count[c]++
	}
	for class, share := range map[int]float64{0: 0.6, 1: 0.3, -1: 0.1} {
		if got := float64(count[class]) / n; math.Abs(got-share) > 0.02 {
			t.Errorf("class %d drawn for %.3f of the requests, want %.2f", class, got, share)
		}
	}
	if same == n {
		t.Error("another seed drew the same classes")
	}
	if (&workload.Workload{}).SLOClassOf(1, 0) != -1 {
		t.Error("a workload without classes drew one")
	}
}

func TestSLOHeadersYAML(t *testing.T) {
	w, err := workload.Parse("w.yaml", []byte(`
name: w
duration: 1s
arrival: {process: poisson, rate: 1}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 5}
slo_headers:
  - {share: 0.25, ttft: 500ms, tpot: 20ms, priority: -1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.SLOHeaders) != 1 || w.SLOHeaders[0].String() != "share=0.25,ttft=500ms,tpot=20ms,priority=-1" {
		t.Fatalf("slo_headers = %v", w.SLOHeaders)
	}
	if _, err := workload.Parse("w.yaml", []byte(`
name: w
duration: 1s
arrival: {process: poisson, rate: 1}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 5}
slo_headers: [{share: 1.5, ttft: 1s}]
`)); err == nil || !strings.Contains(err.Error(), "slo_headers[0].share") {
		t.Fatalf("share 1.5 accepted or badly reported: %v", err)
	}
}
