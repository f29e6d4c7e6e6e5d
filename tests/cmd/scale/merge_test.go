package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Reports of several sweeps merge into one, by pool size, each result keeping its dilation; a
// collapsed pool's size is not fitted.
func TestMergeReports(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r Report) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", Report{Timings: "lan", Dilation: 1, Target: 1000,
		Results: []Result{{Gateways: 30, SentPerNode: 14_000}, {Gateways: 10, SentPerNode: 7_000}}})
	b := write("b.json", Report{Timings: "lan", Dilation: 4, Results: []Result{{Gateways: 100, SentPerNode: 30_000},
		{Gateways: 300, SentPerNode: 12_000, StaleFraction: 1}}}) // collapsed: not fitted
	rep, err := mergeReports([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range rep.Results {
		sizes = append(sizes, r.Gateways)
	}
	if len(sizes) != 4 || sizes[0] != 10 || sizes[2] != 100 || rep.Results[2].Dilation != 4 ||
		rep.Results[0].Dilation != 1 {
		t.Errorf("merged %+v", rep.Results)
	}
	if rep.Fits.SentPerNode.Points != 3 {
		t.Errorf("fitted over %d sizes, want 3 (not the collapsed one)", rep.Fits.SentPerNode.Points)
	}
	if _, err := mergeReports([]string{filepath.Join(dir, "missing.json")}); err == nil {
		t.Error("a missing report merged")
	}
}
