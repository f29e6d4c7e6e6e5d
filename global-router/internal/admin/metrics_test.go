package admin_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

// testutilGauge returns the value of the unlabelled gauge name in e's registry.
func testutilGauge(t *testing.T, e *admintest.Env, name string) float64 {
	t.Helper()
	mfs, err := e.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// callCount returns the calls counted for method with code.
func callCount(t *testing.T, e *admintest.Env, method, code string) float64 {
	t.Helper()
	mfs, err := e.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_router_admin_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
