package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// steadyWorkload is Poisson load of short streamed chat requests, small enough for a shared CI
// machine: the fault scenarios measure outcomes, not latency.
const steadyWorkload = `
name: e2e-steady
seed: 11
duration: %s
endpoint: chat
model: test-model
stream: true
ignore_eos: true
arrival: {process: poisson, rate: %g}
prompt: {dist: lognormal, mean: 200, sigma: 0.4, max: 800}
output: {dist: lognormal, mean: %d, sigma: 0.3, max: 400}
`

// load is steady traffic running in the background of a fault scenario.
type load struct {
	started time.Time
	done    chan struct{}
	res     *loadgen.Result
	err     error
}

// startLoad sends rate requests/s of output-token streams to url for d, in the background.
func startLoad(t *testing.T, url string, rate float64, d time.Duration, outputTokens int) *load {
	t.Helper()
	w, err := workload.Parse("e2e", []byte(fmt.Sprintf(steadyWorkload, d, rate, outputTokens)))
	if err != nil {
		t.Fatal(err)
	}
	l := &load{started: time.Now(), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	go func() {
		defer close(l.done)
		cfg := loadgen.Config{Workload: w, RequestTimeout: 60 * time.Second}
		l.res, l.err = loadgen.Run(ctx, cfg, []loadgen.Target{{Name: "e2e", URL: url}})
	}()
	return l
}

// wait returns the samples once every request has ended.
func (l *load) wait(t *testing.T) []loadgen.Sample {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(5 * time.Minute):
		t.Fatal("load did not finish within 5 minutes")
	}
	if l.err != nil {
		t.Fatalf("load: %v", l.err)
	}
	return l.res.Targets[0].Samples
}

// outcomes counts a run's requests by what the client saw.
type outcomes struct {
	Total, OK int
	// Lost failed without a single generated token: the router or gateway gave up on a request it
	// could have sent elsewhere (or the client got no answer).
	Lost int
	// Cut started streaming and then ended with an error (an error event or a broken stream);
	// CutSilently is the part of Cut that ended without an error event (a truncated stream the
	// client could mistake for a whole answer).
	Cut, CutSilently int
	// Shed got 429 (overload) with the retryable contract.
	Shed int
	// Errors holds a few failure messages, for the test log.
	Errors []string
	// Clusters and Endpoints count successful requests by the cluster and pod that served them.
	Clusters, Endpoints map[string]int
}

func count(samples []loadgen.Sample) outcomes {
	o := outcomes{Clusters: map[string]int{}, Endpoints: map[string]int{}}
	for i := range samples {
		s := &samples[i]
		if s.Error == loadgen.ErrOverload || s.Error == loadgen.ErrCanceled {
			continue
		}
		o.Total++
		switch {
		case s.OK():
			o.OK++
			o.Clusters[s.Cluster]++
			o.Endpoints[s.Endpoint]++
			continue
		case s.Error == loadgen.ErrHTTP429:
			o.Shed++
		case s.TTFT > 0 || s.Error == loadgen.ErrSSE || s.Error == loadgen.ErrStream:
			o.Cut++
			if s.Error != loadgen.ErrSSE {
				o.CutSilently++
			}
		default:
			o.Lost++
		}
		if len(o.Errors) < 8 {
			o.Errors = append(
				o.Errors,
				fmt.Sprintf("#%d at %s: %s %d %s", s.Index, s.Sent.Round(time.Millisecond), s.Error, s.Status, s.ErrorMessage),
			)
		}
	}
	return o
}

func (o outcomes) String() string {
	return fmt.Sprintf(
		"%d requests: %d ok, %d lost, %d cut mid-stream (%d without an error event), %d shed (429); clusters %v; errors: %s",
		o.Total,
		o.OK,
		o.Lost,
		o.Cut,
		o.CutSilently,
		o.Shed,
		o.Clusters,
		strings.Join(o.Errors, "; "),
	)
}

// servedAfter returns, for requests sent at or after from (measured from the start of the run),
// how many successful ones each cluster (by=cluster) or endpoint (by=endpoint) served.
func servedAfter(samples []loadgen.Sample, from time.Duration, by string) map[string]int {
	out := map[string]int{}
	for i := range samples {
		s := &samples[i]
		if !s.OK() || s.Sent < from {
			continue
		}
		if by == "endpoint" {
			out[s.Endpoint]++
		} else {
			out[s.Cluster]++
		}
	}
	return out
}

// lastSentTo returns the send time (from the start of the run) of the last successful request
// served by cluster or endpoint name, or -1.
func lastSentTo(samples []loadgen.Sample, name string) time.Duration {
	last := time.Duration(-1)
	for i := range samples {
		s := &samples[i]
		if s.OK() && (s.Cluster == name || s.Endpoint == name) && s.Sent > last {
			last = s.Sent
		}
	}
	return last
}

// sortedKeys returns m's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
