package e2e

import (
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// testModel is the model every simulated pod of a world serves.
const testModel = harness.TestModel

// world and node are the harness's: real processes started one by one for a fault-injection test.
type (
	world = harness.World
	node  = harness.Node
)

func newWorld(t *testing.T) *world { return harness.NewWorld(t, binDir) }

func addToxic(t *testing.T, p *toxiproxy.Proxy, kind, stream, attrs string) {
	t.Helper()
	harness.AddToxic(t, p, kind, stream, attrs)
}

func metricValue(t *testing.T, addr, family string, labels ...string) float64 {
	t.Helper()
	return harness.MetricValue(t, addr, family, labels...)
}
