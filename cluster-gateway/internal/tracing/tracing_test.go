package tracing_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// TestDefaultConfigIsTheGateways checks the names the gateway's spans and metrics carry
// (docs/gateway.md#tracing): service cluster-gateway, its scope, switchyard_gateway_trace_*.
func TestDefaultConfigIsTheGateways(t *testing.T) {
	c := tracing.DefaultConfig()
	if c.ServiceName != "cluster-gateway" || c.Scope != tracing.Scope || c.MetricNamespace != "switchyard_gateway" {
		t.Fatalf("DefaultConfig() = %+v, want the gateway's service name, scope and metric namespace", c)
	}
	if c.RemoteParent != telemetry.RemoteParentRespect {
		t.Errorf("RemoteParent = %q, want %q", c.RemoteParent, telemetry.RemoteParentRespect)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestScoreEntry(t *testing.T) {
	long := string(make([]byte, 100))
	for _, tc := range []struct {
		name  string
		score float64
		want  string
	}{
		{"pod-a", 0.8124, "pod-a=0.812"},
		{long, 1, long[:64] + "=1.000"},
	} {
		if got := tracing.ScoreEntry(tc.name, tc.score); got != tc.want {
			t.Errorf("ScoreEntry(%q, %v) = %q, want %q", tc.name, tc.score, got, tc.want)
		}
	}
}
