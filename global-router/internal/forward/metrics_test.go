package forward_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// TestClusterLabelBounded counts attempts to more clusters than the cluster label may take,
// and to names that are not valid label values: the family stays bounded, the surplus is
// counted under "other", and no name makes the counter panic.
func TestClusterLabelBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := forward.NewMetrics(reg)
	const clusters = 3 * promlabel.DefaultLimit
	for i := range clusters {
		m.Observe(forward.Outcome{Target: forward.Target{Cluster: fmt.Sprint("c-", i)}, Status: 200})
		m.Observe(forward.Outcome{Target: forward.Target{Cluster: fmt.Sprint("bad-\xff-", i)}, Status: 200})
	}
	if n := testutil.CollectAndCount(reg, "switchyard_router_attempts_total"); n > promlabel.DefaultLimit+1 {
		t.Errorf("%d series after %d cluster names, want at most %d", n, 2*clusters, promlabel.DefaultLimit+1)
	}
	got := 0.0
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == promlabel.Other {
					got += s.GetCounter().GetValue()
				}
			}
		}
	}
	if wantOther := float64(2*clusters - promlabel.DefaultLimit); got != wantOther {
		t.Errorf("other counted %v attempts, want %v", got, wantOther)
	}
}
