package bench_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestReplicasSmoke runs the replicas scenario briefly on two pods: one gateway, three sharing
// replicas and three alone behind their round-robin fronts serve every request, and the verdict
// is decided. That the replicas share their state is cluster-gateway's TestReplicasSharePrefixRoutes
// and TestReplicasShareInFlight (internal/app).
func TestReplicasSmoke(t *testing.T) {
	harness.EndToEnd(t)
	runScenarioSmoke(t, "replicas")
}
