package tracing_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// TestDefaultConfigIsTheRouters checks the names the router's spans and metrics carry
// (docs/router.md#tracing): service global-router, its scope, switchyard_router_trace_*.
func TestDefaultConfigIsTheRouters(t *testing.T) {
	c := tracing.DefaultConfig()
	if c.ServiceName != "global-router" || c.Scope != tracing.Scope || c.MetricNamespace != "switchyard_router" {
		t.Fatalf("DefaultConfig() = %+v, want the router's service name, scope and metric namespace", c)
	}
	if c.RemoteParent != telemetry.RemoteParentIgnore {
		t.Errorf("RemoteParent = %q, want %q", c.RemoteParent, telemetry.RemoteParentIgnore)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestEstimateEntry(t *testing.T) {
	if got := tracing.EstimateEntry("eu-1", 12500*time.Microsecond); got != "eu-1=12.5ms" {
		t.Errorf("EstimateEntry = %q, want eu-1=12.5ms", got)
	}
	if got := tracing.EstimateEntry(strings.Repeat("c", 100), time.Second); got != strings.Repeat("c", 64)+"=1000.0ms" {
		t.Errorf("EstimateEntry kept a long name: %q", got)
	}
}
