package routing_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// A pod that just joined a busy cluster (scale-up) makes the cluster's best-pod prediction that
// of an idle pod. Spread evenly over the pods, the work a router sends there looks light, and it
// herds request after request onto the one pod the gateway will put them all on. Water-filled
// (the summary carries the mean), the cluster looks as busy as it is after a few requests.
func TestWaterFillStopsHerdingOnANewPod(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200} // 50 ms of prefill per pod
	route := func(mean time.Duration) (onNew int, wait time.Duration) {
		scaled := cluster("scaled", "us-east-1", 0.1, 0) // 8 pods: one new (20 ms), 7 at 400 ms
		scaled.ReadyPods, scaled.BaseTTFT, scaled.MeanTTFT = 8, 20*ms, mean
		steady := cluster("steady", "us-east-1", 0.1, 0) // 8 pods at 200 ms
		steady.ReadyPods, steady.BaseTTFT, steady.MeanTTFT = 8, 200*ms, 200*ms
		cs := []routing.Cluster{scaled, steady}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 12 {
			d, err := routing.Decide("us-east-1", cs, routing.DefaultPolicy(), req, routing.DefaultOptions(), rng)
			if err != nil {
				t.Fatal(err)
			}
			c := &cs[d.Targets[0]]
			c.InFlight++
			c.InFlightTokens += int64(req.PromptTokens)
			if c.Name == "scaled" {
				onNew++
			}
		}
		return onNew, 20*ms + time.Duration(onNew)*50*ms // the new pod's backlog, all of it there
	}
	even, evenWait := route(0)
	filled, filledWait := route(20*ms + 7*380*ms/8) // mean of 20 ms and seven 400 ms
	if even < 10 {
		t.Fatalf(
			"spread evenly, %d of 12 requests went to the scaled cluster; the test expects the herd it guards against",
			even,
		)
	}
	if filled > 6 {
		t.Errorf(
			"water-filled, %d of 12 requests went to the scaled cluster (its new pod then waits %v), want at most 6",
			filled,
			filledWait,
		)
	}
	t.Logf(
		"to the scaled cluster: %d of 12 spread evenly (new pod waits %v), %d water-filled (%v)",
		even,
		evenWait,
		filled,
		filledWait,
	)
}
