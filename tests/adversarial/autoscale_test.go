package adversarial

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestAutoscaleSignalFollowsLoad drives a real gateway over two simulated A10G pods up and back
// down: its desired replicas rise above the two ready pods within 30 s of the load, and fall back
// to the minimum within 30 s of its end (the scale-down window is 2 s here); the region's router
// reports the cluster's ready pods and KV as the region's spare capacity.
func TestAutoscaleSignalFollowsLoad(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-autoscale", "us-east-1",
		[]string{w.Pod("a10g").Listen, w.Pod("a10g").Listen},
		"--autoscale-interval=200ms", "--autoscale-scale-down-window=2s")
	router := w.Router("us-east-1", "")
	desired := func() float64 {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_desired_replicas", "model="+harness.TestModel)
	}
	poll.Until(t, 30*time.Second, func() bool { return desired() == 1 }, "an idle pool asking for one replica")
	poll.Until(t, 30*time.Second, func() bool {
		return harness.MetricValue(t, router.Metrics, "switchyard_router_region_ready_pods", "region=us-east-1") == 2 &&
			harness.MetricValue(t, router.Metrics, "switchyard_router_region_free_kv_tokens", "region=us-east-1") > 0
	}, "the router's view of the region's spare capacity")

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	body := `{"model":"` + harness.TestModel + `","prompt":"` + strings.Repeat("load the cache ", 600) +
		`","max_tokens":512}`
	for range 48 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+gw.Listen+"/v1/completions",
					strings.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	poll.Until(
		t,
		30*time.Second,
		func() bool { return desired() > 2 },
		"the loaded pool asking for more than its two pods",
	)
	up := desired()
	stop()
	wg.Wait()
	poll.Until(t, 30*time.Second, func() bool { return desired() == 1 }, "the pool back to one replica after the load")
	t.Logf("desired replicas under load %v, back to 1 after it", up)
	if n := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_ready_replicas", "model="+harness.TestModel); n != 2 {
		t.Errorf("ready replicas %v, want 2", n)
	}
}
