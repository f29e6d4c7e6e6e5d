package app_test

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

var desiredRe = regexp.MustCompile(`(?m)^switchyard_gateway_desired_replicas\{model="llama"\} (\d+)$`)

// desired returns the gateway's published desired replicas for llama, -1 when absent.
func desired(t *testing.T, g *gateway) int {
	t.Helper()
	m := desiredRe.FindStringSubmatch(get(t, "http://"+g.MetricsAddr()+"/metrics"))
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// The desired replica count follows the pool's queue up and back down, on a gateway without
// gossip (the capacity figures are computed all the same).
func TestAutoscaleSignalFollowsLoad(t *testing.T) {
	g := startGateway(t, 2, "--autoscale-interval=50ms", "--autoscale-scale-down-window=0s",
		"--autoscale-max-replicas=5")
	poll.Until(t, waitTimeout, func() bool { return desired(t, g) == 1 }, "an idle pool of two asking for one")
	for _, p := range g.pods {
		p.waiting.Store(10) // 5× the target queue per pod: 2 × 5 = 10, capped at 2 + 4 then at the max, 5
	}
	poll.Until(t, waitTimeout, func() bool { return desired(t, g) == 5 }, "a queued pool asking for the max")
	for _, p := range g.pods {
		p.waiting.Store(0)
	}
	poll.Until(t, waitTimeout, func() bool { return desired(t, g) == 1 }, "the pool back to one once idle")
}

// With --autoscale-interval=0 no signal is published.
func TestAutoscaleSignalOff(t *testing.T) {
	g := startGateway(t, 1, "--autoscale-interval=0s")
	if n := desired(t, g); n != -1 {
		t.Fatalf("desired replicas %d published with the signal off", n)
	}
}

// A bad --autoscale-* value is refused at start, naming its flag.
func TestAutoscaleFlagsValidated(t *testing.T) {
	for _, tt := range []struct{ arg, flag string }{
		{"--autoscale-target-kv=1.5", "--autoscale-target-kv"},
		{"--autoscale-target-queue=0", "--autoscale-target-queue"},
		{"--autoscale-target-ttft=-1s", "--autoscale-target-ttft"},
		{"--autoscale-scale-down-window=-1s", "--autoscale-scale-down-window"},
		{"--autoscale-min-replicas=-1", "--autoscale-min-replicas"},
		{"--autoscale-interval=-1s", "--autoscale-interval"},
		{"--autoscale-max-replicas=2 --autoscale-min-replicas=3", "--autoscale-max-replicas"},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			args := append([]string{"--cluster=c1", "--endpoints=127.0.0.1:1"}, strings.Fields(tt.arg)...)
			cfg, err := app.ParseConfig(args, func(string) string { return "" }, io.Discard)
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Fatalf("err %v, want one naming %s", err, tt.flag)
			}
		})
	}
}
