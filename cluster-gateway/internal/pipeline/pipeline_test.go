package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/hashpool"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
)

var errSaturated = errors.New("saturated")

// longPrompt is a completion body whose prompt (about 20 KB, distinct per i) has a few hundred
// prefix blocks.
func longPrompt(i int) string {
	return fmt.Sprintf(`{"model":"llama","prompt":"%d %s"}`, i, strings.Repeat("lorem ipsum dolor ", 1100))
}

// capturing is a scheduler that keeps the hash slice of the last request it saw (as a
// careless consumer would) and answers with its endpoints, or err.
type capturing struct {
	eps    []framework.Endpoint
	err    error
	hashes []uint64
	// onSchedule, when set, sees every request scheduled.
	onSchedule func(*framework.Request)
}

func (c *capturing) Schedule(_ context.Context, req *framework.Request) (*framework.Result, error) {
	c.hashes = req.PrefixHashes
	if c.onSchedule != nil {
		c.onSchedule(req)
	}
	if c.err != nil {
		return nil, c.err
	}
	return &framework.Result{Targets: c.eps}, nil
}

// TestDoneReleasesPrefixHashes checks the release points: a refused request's hashes are
// released by Decide, an admitted one's by Done, and a slice kept past its release reads as
// poison (so the checks above would see a read after release).
func TestDoneReleasesPrefixHashes(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"admitted, then done", nil, 0},
		{"refused by the scheduler", errSaturated, http.StatusTooManyRequests},
		{"no endpoint", fmt.Errorf("no endpoint"), http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pipe, sched := capturePipeline(t, tt.err)
			get := func(string) string { return "" }
			d, apiErr := pipe.Decide(context.Background(), []byte(longPrompt(1)), get, nil)
			if tt.status != 0 {
				if apiErr == nil || apiErr.Status != tt.status {
					t.Fatalf("error %v, want status %d", apiErr, tt.status)
				}
			} else {
				if apiErr != nil {
					t.Fatal(apiErr)
				}
				if len(d.Request.PrefixHashes) < 300 || d.Request.PrefixHashes[0] == hashpool.Poison {
					t.Fatalf("%d hashes before Done", len(d.Request.PrefixHashes))
				}
				pipe.Done(d)
				if d.Request.PrefixHashes != nil {
					t.Fatal("request still refers to its hashes after Done")
				}
			}
			if len(sched.hashes) < 300 {
				t.Fatalf("scheduler saw %d hashes", len(sched.hashes))
			}
			for i, h := range sched.hashes {
				if h != hashpool.Poison {
					t.Fatalf("hash %d = %#x after release, want poison", i, h)
				}
			}
		})
	}
}

// capturePipeline is a Pipeline over a poisoning router and a capturing scheduler failing
// with err (flow control off: saturation is refused at once).
func capturePipeline(t *testing.T, err error) (*pipeline.Pipeline, *capturing) {
	t.Helper()
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:8000"}})
	for _, ep := range store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama"})
	}
	sched := &capturing{eps: store.View().Endpoints(), err: err}
	router, rerr := bbr.NewRouter(bbr.DefaultConfig(), store)
	if rerr != nil {
		t.Fatal(rerr)
	}
	router.PoisonReleasedHashes()
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	flow, ferr := flowcontrol.New(
		fcfg,
		sched,
		flowcontrol.Options{IsSaturated: func(e error) bool { return e == errSaturated }},
	)
	if ferr != nil {
		t.Fatal(ferr)
	}
	m, merr := pipeline.NewMetrics(nil)
	if merr != nil {
		t.Fatal(merr)
	}
	pipe, perr := pipeline.New(pipeline.Options{Router: router, Flow: flow, Classify: fcfg, Metrics: m})
	if perr != nil {
		t.Fatal(perr)
	}
	return pipe, sched
}
