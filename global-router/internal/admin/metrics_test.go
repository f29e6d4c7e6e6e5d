package admin_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
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

// TestMethodLabelBounded sends unauthenticated calls to made-up methods (some with escapes that
// decode to bytes that are not UTF-8): each is refused, counted under method "other", and the
// calls family keeps its size; a real call is still served.
func TestMethodLabelBounded(t *testing.T) {
	e := newEnv(t)
	client := e.Server.Client()
	const n = 2000
	for i := range n {
		path := fmt.Sprintf("/switchyard.admin.v1.AdminService/Made%d", i)
		if i%3 == 0 {
			path = fmt.Sprintf("/switchyard.admin.v1.AdminService/%%ff%%fe%d", i)
		}
		resp, err := client.Post(e.Server.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %d, want 401", path, resp.StatusCode)
		}
	}
	if got := callCount(t, e, promlabel.Other, "unauthenticated"); got != n {
		t.Errorf("made-up methods counted %v times under other, want %d", got, n)
	}
	if c := testutil.CollectAndCount(e.Reg, "switchyard_router_admin_calls_total"); c > 2 {
		t.Errorf("%d series after %d made-up methods, want the one of other (and none per path)", c, n)
	}
	if _, err := e.Client.ListClusters(testCtx(t), connect.NewRequest(&adminv1.ListClustersRequest{})); err != nil {
		t.Fatalf("a real call after the flood: %v", err)
	}
	if got := callCount(t, e, "ListClusters", "ok"); got != 1 {
		t.Errorf("ListClusters ok counted %v, want 1", got)
	}
}
