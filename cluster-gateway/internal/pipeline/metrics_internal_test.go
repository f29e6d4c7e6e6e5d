package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// TestModelLabelBounded counts requests for more served models than the model label may take
// (pods may list any number of adapters), for unresolved names, and with made-up pod statuses:
// every family keeps a bounded number of series and the surplus is counted under "other".
func TestModelLabelBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const served = 3 * promlabel.DefaultLimit
	for i := range served {
		req := &framework.Request{Model: fmt.Sprint("adapter-", i), BaseModel: "base"}
		m.observe(&Decision{Request: req, Started: now}, 600+i%300, now, Measurement{TTFT: time.Millisecond})
		m.rejected(&framework.Request{Model: fmt.Sprint("unknown-\xff-", i)}, 404)
	}
	for _, tc := range []struct {
		family string
		max    int
	}{
		// Each model value with each code value at most, and in fact far fewer: a model's
		// requests here all share one code.
		{"switchyard_gateway_requests_total", promlabel.DefaultLimit + maxCodes + 2},
		{"switchyard_gateway_request_duration_seconds", promlabel.DefaultLimit + 1},
		{"switchyard_gateway_ttft_seconds", promlabel.DefaultLimit + 1},
	} {
		if n := testutil.CollectAndCount(reg, tc.family); n > tc.max {
			t.Errorf(
				"%s: %d series after %d served models and %d unknown ones, want at most %d",
				tc.family,
				n,
				served,
				served,
				tc.max,
			)
		}
	}
	if v := testutil.ToFloat64(m.requests.WithLabelValues(promlabel.Other, "404")); v != served {
		t.Errorf("unresolved names counted %v times under model=other, want %d", v, served)
	}
	if v := testutil.ToFloat64(m.requests.WithLabelValues("adapter-0", "600")); v != 1 {
		t.Errorf("an admitted model counted %v times under its own name, want 1", v)
	}
}
