package frontdoor_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// outcomes records the outcomes a front door reports.
type outcomes struct {
	mu  sync.Mutex
	got []frontdoor.Outcome
}

func (o *outcomes) RecordOutcome(x frontdoor.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, x)
}

func (o *outcomes) list() []frontdoor.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// TestOutcomesRecorded: every routed request's outcome reaches Config.Outcomes with the cluster
// that answered, why it left the region, and the model only when a fresh cluster lists it.
func TestOutcomesRecorded(t *testing.T) {
	tests := []struct {
		name  string
		specs []clusterSpec
		body  string
		want  frontdoor.Outcome
	}{
		{"local", []clusterSpec{{"east", "us-east-1", 0.1, 0}, {"west", "us-west-2", 0, 0}}, okBody,
			frontdoor.Outcome{Model: "llama", Cluster: "east", Region: "us-east-1", Outcome: "local"}},
		{"overflow", []clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0, 0}}, okBody,
			frontdoor.Outcome{Model: "llama", Cluster: "west", Region: "us-west-2", Outcome: "overflow",
				LeftBecause: contract.ReasonUnavailable}},
		{"unknown model", []clusterSpec{{"east", "us-east-1", 0.1, 0}}, `{"model":"nope","prompt":"x"}`,
			frontdoor.Outcome{Outcome: "not_found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.specs...)
			tb := clustertable.New(clustertable.Config{Region: "us-east-1"}, f, nil)
			fwd, err := forward.New(forward.DefaultConfig(), tb)
			if err != nil {
				t.Fatal(err)
			}
			rec := &outcomes{}
			cfg := frontdoor.DefaultConfig()
			cfg.Region, cfg.Outcomes = "us-east-1", rec
			srv := httptest.NewServer(frontdoor.New(cfg, tb, policies(nil), fwd, nil, nil).Handler())
			t.Cleanup(srv.Close)
			before := time.Now()
			resp, _ := post(t, srv.URL, tt.body)
			if tt.want.Cluster != "" && resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			poll.Until(t, waitTimeout, func() bool { return len(rec.list()) == 1 }, "one outcome recorded")
			got := rec.list()[0]
			if got.Time.Before(before) || got.Time.After(time.Now()) {
				t.Errorf("outcome time %v is not the request's", got.Time)
			}
			got.Time = time.Time{}
			if got != tt.want {
				t.Errorf("outcome %+v, want %+v", got, tt.want)
			}
		})
	}
}
