package clustertable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

type source []gossip.Summary

func (s source) Snapshot() []gossip.Summary { return s }

type drains map[string]bool

func (d drains) Drained(cluster, region string) bool { return d[cluster] || d[region] }

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func summary(
	cluster, region, node, url string,
	gen time.Time,
	stale bool,
	models ...*gossipv1.ModelCapacity,
) gossip.Summary {
	return gossip.Summary{
		Node: node, Cluster: cluster, Region: region, Stale: stale, State: gossip.StateAlive,
		Summary: &gossipv1.CapacitySummary{
			Cluster: cluster, Region: region, Node: node, GatewayUrl: url,
			GeneratedAtUnixNano: gen.UnixNano(), Models: models,
		},
	}
}

func model(name string, pods uint32, adapters ...string) *gossipv1.ModelCapacity {
	m := &gossipv1.ModelCapacity{
		Name: name, ReadyPods: pods, TotalKvTokens: 400_000, FreeKvTokens: 300_000, QueueDepth: 2,
		PredictedTtftMs: 100, MeanPredictedTtftMs: 180, PrefillTokensPerSecond: 20_000 * float32(pods),
		DecodeTokensPerSecond: 40 * float32(pods),
	}
	for _, a := range adapters {
		m.Adapters = append(m.Adapters, &gossipv1.AdapterCapacity{Name: a, ResidentPods: 1})
	}
	return m
}

func TestViewPicksFreshestReplicaAndFillsFigures(t *testing.T) {
	now := time.Unix(1000, 0)
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", now.Add(-2*time.Second), false, model("llama", 4, "sql")),
		summary("c1", "us-east-1", "gw-b", "http://b", now.Add(-time.Second), false, model("llama", 4, "sql")),
		summary("c1", "us-east-1", "gw-c", "http://c", now.Add(-10*time.Second), true, model("llama", 4)),
		summary("c2", "eu-west-1", "gw-d", "http://d", now.Add(-10*time.Second), true, model("llama", 2)),
	}
	src[1].Age = 300 * time.Millisecond
	tb := clustertable.New(
		clustertable.Config{
			Region: "us-east-1",
			RTT:    map[string]time.Duration{"eu-west-1": 80 * time.Millisecond},
			Now:    func() time.Time { return now },
		},
		src,
		drains{},
	)
	view := routeView(tb, "sql", nil)
	if len(view) != 2 {
		t.Fatalf("view has %d clusters, want 2", len(view))
	}
	c1, c2 := view[0], view[1]
	if got := c1.URLs; len(got) != 2 || got[0] != "http://b" || got[1] != "http://a" {
		t.Errorf("c1 URLs = %v, want fresh replicas newest first [http://b http://a]", got)
	}
	if !c1.Cluster.Serves || c1.Cluster.Stale || c1.Cluster.ReadyPods != 4 || c1.Cluster.Queue != 2 {
		t.Errorf("c1 figures wrong: %+v", c1.Cluster)
	}
	// 100 ms predicted for 1,000 tokens at 20,000 tok/s per pod: 50 ms of it is prefill; the
	// mean, 180 ms, waits 130 ms.
	if c1.Cluster.BaseTTFT != 50*time.Millisecond || c1.Cluster.MeanTTFT != 130*time.Millisecond ||
		c1.Cluster.PrefillTokensPerSec != 20_000 {
		t.Errorf(
			"c1 base TTFT %v mean %v prefill %v",
			c1.Cluster.BaseTTFT,
			c1.Cluster.MeanTTFT,
			c1.Cluster.PrefillTokensPerSec,
		)
	}
	// The chosen replica's summary is 300 ms old; 40 tokens/s of decode per pod is a 25 ms step.
	if c1.Cluster.SummaryAge != 300*time.Millisecond || c1.Cluster.StepTime != 25*time.Millisecond {
		t.Errorf("c1 summary age %v step %v, want 300ms and 25ms", c1.Cluster.SummaryAge, c1.Cluster.StepTime)
	}
	if !c2.Cluster.Stale || c2.Cluster.RTT != 80*time.Millisecond || c2.Cluster.Serves {
		t.Errorf("c2 should be stale, 80ms away and not serve the adapter: %+v", c2.Cluster)
	}
}

func TestDrainsAndPassiveHealth(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", clk.t, false, model("llama", 2)),
		summary("c2", "us-west-2", "gw-b", "http://b", clk.t, false, model("llama", 2)),
	}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, drains{"us-west-2": true})
	if v := routeView(tb, "llama", nil); v[0].Cluster.Drained || !v[1].Cluster.Drained {
		t.Fatalf("drain by region not applied: %+v / %+v", v[0].Cluster, v[1].Cluster)
	}
	target := forward.Target{Cluster: "c1"}
	tests := []struct {
		name        string
		outcome     forward.Outcome
		advance     time.Duration
		wantEjected bool
	}{
		{"connect error ejects at once", forward.Outcome{Target: target, Err: errors.New("refused")}, 0, true},
		{"ejection ends after the base backoff", forward.Outcome{}, 1500 * time.Millisecond, false},
		{"503 is not a health failure", forward.Outcome{Target: target, Status: 503}, 0, false},
		{"one 500 is tolerated", forward.Outcome{Target: target, Status: 500}, 0, false},
		{"two 500s are tolerated", forward.Outcome{Target: target, Status: 500}, 0, false},
		{"three 500s in a row eject", forward.Outcome{Target: target, Status: 500}, 0, true},
		{"second ejection lasts longer", forward.Outcome{}, 1500 * time.Millisecond, true},
		{"and ends", forward.Outcome{}, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.t = clk.t.Add(tt.advance)
			if tt.outcome.Target.Cluster != "" {
				tb.Observe(tt.outcome)
			}
			if got := routeView(tb, "llama", nil)[0].Cluster.Unhealthy; got != tt.wantEjected {
				t.Fatalf("unhealthy = %v, want %v", got, tt.wantEjected)
			}
		})
	}
}

func TestInFlightSinceSummaryAndPrefixSketch(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	prompt := make([]byte, 10*prefix.BlockSize)
	for i := range prompt {
		prompt[i] = byte('a' + i%26)
	}
	hashes := prefix.Hashes(nil, "llama", prompt, 0)
	b, err := sketch.NewForCapacity(1000, 0.01, 42)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes[:6] {
		b.Add(h)
	}
	m := model("llama", 2)
	m.PrefixSketch = b.Proto()
	src := source{summary("c1", "us-east-1", "gw", "http://a", clk.t, false, m)}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)

	tb.Sent("c1") // at the summary's own time: already counted by the gateway
	clk.t = clk.t.Add(100 * time.Millisecond)
	tb.Sent("c1")
	clk.t = clk.t.Add(20 * time.Millisecond)
	tb.Sent("c1")
	clk.t = clk.t.Add(30 * time.Millisecond)
	c := routeView(tb, "llama", hashes)[0].Cluster
	if c.InFlight != 2 || c.InFlightAge != 50*time.Millisecond {
		t.Errorf("in-flight since summary = %d, the oldest sent %v ago; want 2, 50ms", c.InFlight, c.InFlightAge)
	}
	if c.CachedPrefixTokens != 6*16 {
		t.Errorf("cached prefix tokens = %d, want %d", c.CachedPrefixTokens, 6*16)
	}
}

func TestFlappingClusterEjectedLongerEachTime(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	// c2 is there so that c1 may be ejected (a lone cluster never is: see MaxEjectionPercent).
	src := source{summary("c1", "us-east-1", "gw-a", "http://a", clk.t, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", clk.t, false, model("llama", 2))}
	// Slow start always admits c1 once it is back: with c2 there it would otherwise be withheld
	// from a share of the views.
	cfg := clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return 0 }}
	cfg.Ejection = clustertable.DefaultEjectionConfig()
	tb := clustertable.New(cfg, src, nil)
	refused := forward.Outcome{Target: forward.Target{Cluster: "c1"}, Err: errors.New("refused")}
	ok := forward.Outcome{Target: forward.Target{Cluster: "c1"}, Status: 200}
	tests := []struct {
		name        string
		advance     time.Duration
		outcome     *forward.Outcome
		wantEjected bool
	}{
		{"down: ejected for 1 s", 0, &refused, true},
		{"back after 1 s", 1100 * time.Millisecond, &ok, false},
		{"down again soon after: ejected for 2 s", 500 * time.Millisecond, &refused, true},
		{"still out after 1.5 s", 1500 * time.Millisecond, nil, true},
		{"back after 2 s", 600 * time.Millisecond, &ok, false},
		{"third flap: 4 s", 500 * time.Millisecond, &refused, true},
		{"still out after 3.5 s", 3500 * time.Millisecond, nil, true},
		{"back after 4 s", 600 * time.Millisecond, &ok, false},
		{"stable through probation: success forgets the flaps", 31 * time.Second, &ok, false},
		{"a new failure starts over at 1 s", 0, &refused, true},
		{"and ends after 1 s", 1100 * time.Millisecond, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.t = clk.t.Add(tt.advance)
			if tt.outcome != nil {
				tb.Observe(*tt.outcome)
			}
			if got := routeView(tb, "llama", nil)[0].Cluster.Unhealthy; got != tt.wantEjected {
				t.Fatalf("unhealthy = %v, want %v", got, tt.wantEjected)
			}
		})
	}
}

// Streams the cluster accepted count as waiting until their first token; plain answers, refusals
// and extra first-token reports never make the count wrong.
func TestWaitingForFirstToken(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	// c2 is there so that c1 may be ejected (a lone cluster never is: see MaxEjectionPercent).
	src := source{summary("c1", "us-east-1", "gw", "http://a", clk.t, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", clk.t, false, model("llama", 2))}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)
	target := forward.Target{Cluster: "c1", URL: "http://a"}
	waiting := func() int { return routeView(tb, "llama", nil)[0].Cluster.Waiting }

	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"two accepted streams", func() {
			tb.Observe(forward.Outcome{Target: target, Status: 200, Streamed: true})
			tb.Observe(forward.Outcome{Target: target, Status: 200, Streamed: true})
		}, 2},
		{"a plain answer and a refused stream", func() {
			tb.Observe(forward.Outcome{Target: target, Status: 200})
			tb.Observe(forward.Outcome{Target: target, Status: 503, Retried: true, Streamed: true})
		}, 2},
		{"one first token", func() { tb.FirstToken(target) }, 1},
		{"the other, then one too many", func() { tb.FirstToken(target); tb.FirstToken(target) }, 0},
		{"an unknown cluster's first token", func() { tb.FirstToken(forward.Target{Cluster: "zz"}) }, 0},
	}
	for _, s := range steps {
		s.do()
		if got := waiting(); got != s.want {
			t.Fatalf("after %s: waiting %d, want %d", s.name, got, s.want)
		}
	}
}

// An attempt counts as in flight and waiting from the moment it is dispatched, so requests
// decided before the first one's answer arrives see it; its outcome ends that, and a client
// that left (abandoned) neither ejects the cluster nor counts as sent.
func TestDispatchedCountsUntilOutcome(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	// c2 is there so that c1 may be ejected (a lone cluster never is: see MaxEjectionPercent).
	src := source{summary("c1", "us-east-1", "gw", "http://a", clk.t, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", clk.t, false, model("llama", 2))}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)
	target := forward.Target{Cluster: "c1", URL: "http://a"}
	clk.t = clk.t.Add(10 * time.Millisecond)
	view := func() (inFlight, waiting int, unhealthy bool) {
		c := routeView(tb, "llama", nil)[0].Cluster
		return c.InFlight, c.Waiting, c.Unhealthy
	}
	steps := []struct {
		name              string
		do                func()
		inFlight, waiting int
		unhealthy         bool
	}{
		{"three dispatched", func() { tb.Dispatched(target); tb.Dispatched(target); tb.Dispatched(target) }, 3, 3, false},
		{
			"one answered as a stream",
			func() { tb.Observe(forward.Outcome{Target: target, Status: 200, Streamed: true}) },
			3,
			3,
			false,
		},
		{"one abandoned by its client", func() {
			tb.Observe(forward.Outcome{Target: target, Err: context.Canceled, Retried: true, Abandoned: true})
		}, 2, 2, false},
		{"the stream's first token", func() { tb.FirstToken(target) }, 2, 1, false},
		{"one refused by a connection error", func() {
			tb.Observe(forward.Outcome{Target: target, Err: errors.New("connection refused"), Retried: true})
		}, 1, 0, true},
	}
	for _, s := range steps {
		s.do()
		inFlight, waiting, unhealthy := view()
		if inFlight != s.inFlight || waiting != s.waiting || unhealthy != s.unhealthy {
			t.Fatalf(
				"after %s: in flight %d waiting %d unhealthy %v, want %d %d %v",
				s.name,
				inFlight,
				waiting,
				unhealthy,
				s.inFlight,
				s.waiting,
				s.unhealthy,
			)
		}
	}
}

// The table sums the prompt tokens of what it counts: sends since the summary, attempts on their
// way and streams waiting for a first token, so a cluster sent two long prompts looks busier than
// one sent two short ones.
func TestInFlightTokens(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := source{summary("c1", "us-east-1", "gw", "http://a", clk.t, false, model("llama", 2))}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)
	clk.t = clk.t.Add(10 * time.Millisecond)
	long := forward.Target{Cluster: "c1", URL: "http://a", PromptTokens: 4000}
	short := forward.Target{Cluster: "c1", URL: "http://a", PromptTokens: 300}
	steps := []struct {
		name                       string
		do                         func()
		inFlightTokens, waitingTok int64
	}{
		{"a long and a short dispatched", func() { tb.Dispatched(long); tb.Dispatched(short) }, 4300, 4300},
		{
			"the long one accepted as a stream",
			func() { tb.Observe(forward.Outcome{Target: long, Status: 200, Streamed: true}) },
			4300,
			4300,
		},
		{
			"the short one refused",
			func() { tb.Observe(forward.Outcome{Target: short, Status: 503, Retried: true}) },
			4000,
			4000,
		},
		{"the long one's first token", func() { tb.FirstToken(long) }, 4000, 0},
		{"a short plain answer", func() {
			tb.Dispatched(short)
			tb.Observe(forward.Outcome{Target: short, Status: 200})
		}, 4300, 0},
		{"a first token too many", func() { tb.FirstToken(long) }, 4300, 0},
	}
	for _, s := range steps {
		s.do()
		c := routeView(tb, "llama", nil)[0].Cluster
		if c.InFlightTokens != s.inFlightTokens || c.WaitingTokens != s.waitingTok {
			t.Fatalf(
				"after %s: in-flight tokens %d waiting tokens %d, want %d %d",
				s.name,
				c.InFlightTokens,
				c.WaitingTokens,
				s.inFlightTokens,
				s.waitingTok,
			)
		}
	}
}
