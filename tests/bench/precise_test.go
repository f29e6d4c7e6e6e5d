package bench_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestPrecisePrefixSmoke runs the precise-prefix scenario briefly on two pods publishing KV
// events: both policies' gateways (one built from each scenario config) serve every request, and
// the verdict is decided. That the precise gateway routes by the events is
// TestKVEventsRoutePrecisely's (tests/adversarial).
func TestPrecisePrefixSmoke(t *testing.T) {
	harness.EndToEnd(t)
	runScenarioSmoke(t, "precise-prefix")
}
