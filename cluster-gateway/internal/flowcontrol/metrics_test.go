package flowcontrol

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// queueGauges returns the flow_queue_requests samples by priority label.
func queueGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_gateway_flow_queue_requests" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestPriorityLabelBounded queues requests under many client-chosen priorities: the priority
// label takes at most maxPriorityLabels of them plus the configured ones, the rest are counted
// under "other", and each gauge returns to zero when its requests leave the queue.
func TestPriorityLabelBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ObjectivePriorities = map[string]int{"critical": 10} })
	ctx, cancel := context.WithCancel(context.Background())
	const n = 3 * maxPriorityLabels
	var chans []<-chan result
	for i := range n {
		chans = append(chans, h.admit(t, ctx, fmt.Sprint("r", i), "m", 100+i, ""))
	}
	chans = append(chans, h.admit(t, ctx, "critical", "m", 10, ""))
	got := queueGauges(t, h.reg)
	// The default priority (0) and the objective's (10) are preset and take two of the slots.
	if len(got) > maxPriorityLabels+1 {
		t.Errorf("%d priority series for %d distinct priorities, want at most %d", len(got), n+1, maxPriorityLabels+1)
	}
	if got["10"] != 1 {
		t.Errorf("the configured priority 10 has gauge %v, want its own series at 1", got["10"])
	}
	if want := float64(n - (maxPriorityLabels - 2)); got[promlabel.Other] != want {
		t.Errorf("other = %v, want %v (the priorities past the cap)", got[promlabel.Other], want)
	}
	cancel()
	for _, ch := range chans {
		recv(t, ch)
	}
	for label, v := range queueGauges(t, h.reg) {
		if v != 0 {
			t.Errorf("priority %q gauge %v after the queue emptied", label, v)
		}
	}
	if c := testutil.CollectAndCount(h.reg, "switchyard_gateway_flow_queue_requests"); c > maxPriorityLabels+1 {
		t.Errorf("%d series", c)
	}
}
