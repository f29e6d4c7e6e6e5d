package sessionaffinity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/sessionaffinity"
)

// fixture is a scorer over pods a, b and c, idle, on a fake clock.
type fixture struct {
	t   *testing.T
	h   *plugintest.Handle
	s   *sessionaffinity.Scorer
	pod map[string]*plugintest.FakeEndpoint
}

func newFixture(t *testing.T, params string) *fixture {
	t.Helper()
	f := &fixture{t: t, pod: map[string]*plugintest.FakeEndpoint{}}
	var eps []framework.Endpoint
	for _, a := range []string{"a", "b", "c"} {
		f.pod[a] = plugintest.Endpoint(a, "m", 0, 1, 0.2, plugintest.Epoch)
		eps = append(eps, f.pod[a])
	}
	f.h = plugintest.NewHandle(eps...)
	p, err := sessionaffinity.Factory("sa", json.RawMessage(params), f.h)
	if err != nil {
		t.Fatalf("Factory: %v", err)
	}
	f.s = p.(*sessionaffinity.Scorer)
	return f
}

// scores returns the addresses scoring 1 for a request of tenant's session sid ("" none).
func (f *fixture) scores(tenant, sid string) string {
	f.t.Helper()
	eps := f.h.Endpoints()
	sc := make([]float64, len(eps))
	for i := range sc {
		sc[i] = 7 // the scorer must overwrite every score
	}
	f.s.Score(
		context.Background(),
		&framework.CycleState{Now: f.h.Now()},
		&framework.Request{Tenant: tenant, SessionID: sid},
		eps,
		sc,
	)
	var out strings.Builder
	for i, v := range sc {
		switch v {
		case 1:
			out.WriteString(eps[i].Meta().Address)
		case 0:
		default:
			f.t.Fatalf("score %g for %s, want 0 or 1", v, eps[i].Meta().Address)
		}
	}
	return out.String()
}

// serve runs PreRequest for a request of tenant's session sid sent to pod.
func (f *fixture) serve(tenant, sid, pod string) {
	res := &framework.Result{Targets: []framework.Endpoint{f.pod[pod]}}
	f.s.PreRequest(context.Background(), &framework.Request{Tenant: tenant, SessionID: sid}, res)
}

// step is one action of a scenario, then the check of the scores a request of (tenant, sid) gets.
type step struct {
	do           func(f *fixture)
	tenant, sid  string
	want         string // the addresses scoring 1
	serveAtAfter string // when set, the request is then served there
}

func TestScorer(t *testing.T) {
	saturate := func(pod string) func(f *fixture) {
		return func(f *fixture) { plugintest.SetLoad(f.pod[pod], 0, 8, 0.95, f.h.Now()) }
	}
	queue := func(pod string, n int) func(f *fixture) {
		return func(f *fixture) { plugintest.SetLoad(f.pod[pod], n, 8, 0.3, f.h.Now()) }
	}
	advance := func(d time.Duration) func(f *fixture) { return func(f *fixture) { f.h.Advance(d) } }
	tests := []struct {
		name   string
		params string
		steps  []step
	}{
		{"no session scores nothing", "", []step{{sid: "", want: ""}}},
		{"unknown session scores nothing", "", []step{{sid: "s1", want: ""}}},
		{"sticks to the pod that served it", "", []step{
			{sid: "s1", want: "", serveAtAfter: "b"},
			{sid: "s1", want: "b", serveAtAfter: "b"},
			{sid: "s1", want: "b"},
			{sid: "s2", want: ""},
		}},
		{"falls back when the pod's KV is saturated, then moves", "", []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: saturate("a"), sid: "s1", want: "", serveAtAfter: "c"},
			{sid: "s1", want: "c"},
		}},
		{"falls back when the pod's queue is at the threshold", "", []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: queue("a", 4), sid: "s1", want: "a"},
			{do: queue("a", 5), sid: "s1", want: ""},
		}},
		{"its own saturation thresholds", `{"queueDepthThreshold": 2, "kvCacheUtilThreshold": 0.5}`, []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: queue("a", 1), sid: "s1", want: "a"},
			{do: queue("a", 2), sid: "s1", want: ""},
		}},
		{"stale metrics are saturated", "", []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: func(f *fixture) {
				f.h.Advance(3 * time.Second)
				for _, p := range []string{"b", "c"} {
					plugintest.SetLoad(f.pod[p], 0, 1, 0.2, f.h.Now())
				}
			}, sid: "s1", want: ""},
		}},
		{"ejected pod is saturated", "", []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: func(f *fixture) { f.pod["a"].EjectUntil(f.h.Now().Add(time.Minute)) }, sid: "s1", want: ""},
		}},
		{"expires after the TTL without requests", `{"sessionTTL": "1m"}`, []step{
			{sid: "s1", serveAtAfter: "a"},
			{do: advance(59 * time.Second), sid: "s1", want: "", serveAtAfter: "a"}, // metrics stale now: no room, but kept
			{do: func(f *fixture) {
				f.h.Advance(59 * time.Second)
				plugintest.SetLoad(f.pod["a"], 0, 1, 0.2, f.h.Now())
			}, sid: "s1", want: "a"}, // the last request renewed it
			{do: func(f *fixture) {
				f.h.Advance(61 * time.Second)
				plugintest.SetLoad(f.pod["a"], 0, 1, 0.2, f.h.Now())
			}, sid: "s1", want: ""},
		}},
		{"tenants do not share sessions", "", []step{
			{tenant: "t1", sid: "s1", serveAtAfter: "a"},
			{tenant: "t2", sid: "s1", want: "", serveAtAfter: "b"},
			{tenant: "t1", sid: "s1", want: "a"},
			{tenant: "t2", sid: "s1", want: "b"},
			{tenant: "", sid: "s1", want: ""},
			{tenant: "t1s", sid: "1", want: ""}, // no concatenation collision
		}},
		{"a removed pod drops its sessions", "", []step{
			{sid: "s1", serveAtAfter: "a"},
			{sid: "s2", serveAtAfter: "b"},
			{do: func(f *fixture) { f.h.Remove("a") }, sid: "s1", want: ""},
			{sid: "s2", want: "b"},
		}},
		{"entries bounded, least recently used evicted", `{"maxSessions": 2}`, []step{
			{sid: "s1", serveAtAfter: "a"},
			{sid: "s2", serveAtAfter: "b"},
			{sid: "s1", want: "a", serveAtAfter: "a"}, // s1 is now the most recent
			{sid: "s3", serveAtAfter: "c"},
			{sid: "s2", want: ""},
			{sid: "s1", want: "a"},
			{sid: "s3", want: "c"},
		}},
		{"bytes bounded", `{"maxBytes": 200}`, []step{ // two sessions of one-letter addresses fit
			{sid: "s1", serveAtAfter: "a"},
			{sid: "s2", serveAtAfter: "b"},
			{sid: "s3", serveAtAfter: "c"},
			{sid: "s1", want: ""},
			{sid: "s3", want: "c"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.params)
			for i, st := range tt.steps {
				if st.do != nil {
					st.do(f)
				}
				if got := f.scores(st.tenant, st.sid); got != st.want {
					t.Fatalf("step %d: session (%q, %q) scores 1 on %q, want %q", i, st.tenant, st.sid, got, st.want)
				}
				if st.serveAtAfter != "" {
					f.serve(st.tenant, st.sid, st.serveAtAfter)
				}
			}
		})
	}
}

func TestParams(t *testing.T) {
	for _, bad := range []string{`{"sessionTTL":"0s"}`, `{"maxSessions":-1}`, `{"maxBytes":10}`,
		`{"kvCacheUtilThreshold":2}`, `{"queueDepthThreshold":0}`, `{"unknown":1}`, `{"sessionTTL":5}`} {
		if _, err := sessionaffinity.Factory("sa", json.RawMessage(bad), nil); err == nil {
			t.Errorf("Factory(%s) succeeded, want an error", bad)
		}
	}
	if _, err := sessionaffinity.Factory("sa", nil, nil); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, `{"maxSessions": 1}`)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.s)
	f.serve("", "s1", "a") // new
	f.serve("", "s1", "a") // stuck
	f.serve("", "s1", "b") // moved
	f.serve("", "s2", "c") // new, evicts s1
	f.h.Remove("c")        // drops s2
	want := `
# HELP switchyard_gateway_session_affinity_decisions_total Requests with a session id by where they went: ` +
		`stuck (where the session was served last), moved (elsewhere: that pod was saturated, gone or outscored) or ` +
		`new (the session was not known).
# TYPE switchyard_gateway_session_affinity_decisions_total counter
switchyard_gateway_session_affinity_decisions_total{outcome="moved",plugin="sa"} 1
switchyard_gateway_session_affinity_decisions_total{outcome="new",plugin="sa"} 2
switchyard_gateway_session_affinity_decisions_total{outcome="stuck",plugin="sa"} 1
# HELP switchyard_gateway_session_affinity_evictions_total Sessions the session-affinity-scorer dropped, by ` +
		`reason: capacity (its table was full), expired (idle for the TTL), endpoint_removed (the pod left the pool).
# TYPE switchyard_gateway_session_affinity_evictions_total counter
switchyard_gateway_session_affinity_evictions_total{plugin="sa",reason="capacity"} 1
switchyard_gateway_session_affinity_evictions_total{plugin="sa",reason="endpoint_removed"} 1
switchyard_gateway_session_affinity_evictions_total{plugin="sa",reason="expired"} 0
# HELP switchyard_gateway_session_affinity_sessions Sessions the session-affinity-scorer remembers now ` +
		`(bounded by maxSessions).
# TYPE switchyard_gateway_session_affinity_sessions gauge
switchyard_gateway_session_affinity_sessions{plugin="sa"} 0
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_gateway_session_affinity_decisions_total",
		"switchyard_gateway_session_affinity_evictions_total",
		"switchyard_gateway_session_affinity_sessions",
	); err != nil {
		t.Fatal(err)
	}
	f.serve("", "s3", "a")
	if n, b := f.s.Sessions(); n != 1 || b <= 0 {
		t.Fatalf("Sessions() = %d, %d bytes; want 1 and a positive size", n, b)
	}
}

// FuzzSessionID feeds arbitrary tenants and session ids: the scorer never panics, scores in
// {0,1}, a session scores where it was served, and the table stays within its bounds.
func FuzzSessionID(f *testing.F) {
	f.Add("", "s1", "t", "s2")
	f.Add("t\x00", "x", "t", "\x00x")
	f.Add(strings.Repeat("t", 300), strings.Repeat("s", 300), "", "")
	f.Fuzz(func(t *testing.T, tenant1, sid1, tenant2, sid2 string) {
		fx := newFixture(t, `{"maxSessions": 3, "maxBytes": 400}`)
		fx.serve(tenant1, sid1, "a")
		fx.serve(tenant2, sid2, "b")
		if sid2 != "" {
			if got := fx.scores(tenant2, sid2); got != "b" {
				t.Fatalf("session (%q, %q) scores on %q, want b", tenant2, sid2, got)
			}
		}
		if sid1 != "" && (tenant1 != tenant2 || sid1 != sid2) {
			if got := fx.scores(tenant1, sid1); got != "a" {
				t.Fatalf("session (%q, %q) scores on %q, want a", tenant1, sid1, got)
			}
		}
		if n, b := fx.s.Sessions(); n > 3 || b > 400 {
			t.Fatalf("table over its bounds: %d sessions, %d bytes", n, b)
		}
	})
}

// BenchmarkScore scores 1,000 endpoints for a request whose session is one of 100,000 known.
func BenchmarkScore(b *testing.B) {
	eps := make([]framework.Endpoint, 1000)
	for i := range eps {
		eps[i] = plugintest.Endpoint(fmt.Sprintf("10.0.%d.%d:80", i/256, i%256), "m", 0, 1, 0.2, plugintest.Epoch)
	}
	s, err := sessionaffinity.New("sa", sessionaffinity.Params{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		req := &framework.Request{Tenant: "t", SessionID: fmt.Sprintf("conv-%d", i)}
		s.PreRequest(context.Background(), req, &framework.Result{Targets: []framework.Endpoint{eps[i%len(eps)]}})
	}
	req := &framework.Request{Tenant: "t", SessionID: "conv-4242"}
	scores := make([]float64, len(eps))
	cs := &framework.CycleState{Now: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		s.Score(context.Background(), cs, req, eps, scores)
	}
}

// BenchmarkPreRequest records sessions into a full table (every record evicts the oldest).
func BenchmarkPreRequest(b *testing.B) {
	ep := plugintest.Endpoint("10.0.0.1:80", "m", 0, 1, 0.2, plugintest.Epoch)
	s, err := sessionaffinity.New("sa", sessionaffinity.Params{MaxSessions: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 20_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("conv-%d", i)
	}
	res := &framework.Result{Targets: []framework.Endpoint{ep}}
	req := &framework.Request{Tenant: "t"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req.SessionID = ids[i%len(ids)]
		s.PreRequest(context.Background(), req, res)
		i++
	}
}
