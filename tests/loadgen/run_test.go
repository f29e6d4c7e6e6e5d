package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/loadgentest"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// testWorkload is a short open-loop workload: rate req/s for d, 10-token prompts, 5-token answers.
func testWorkload(t *testing.T, rate float64, d time.Duration) *workload.Workload {
	t.Helper()
	src := fmt.Sprintf(`
name: test
seed: 3
duration: %s
arrival: {process: poisson, rate: %v}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 5}
`, d, rate)
	w, err := workload.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func run(t *testing.T, cfg loadgen.Config, targets ...loadgen.Target) *loadgen.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg, targets)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func TestStreamTimingAndUsage(t *testing.T) {
	f := &loadgentest.Server{TTFT: 60 * time.Millisecond, ITL: 25 * time.Millisecond, Tokens: 5, Cached: 16,
		Headers: map[string]string{"x-switchyard-endpoint": "10.0.0.1:8000", "x-switchyard-cluster": "c1",
			"x-switchyard-region": "us-east-1", "x-switchyard-route": "local"}}
	url := f.Start(t)
	res := run(
		t,
		loadgen.Config{Workload: testWorkload(t, 20, 500*time.Millisecond)},
		loadgen.Target{Name: "fake", URL: url},
	)
	samples := res.Targets[0].Samples
	if len(samples) < 3 {
		t.Fatalf("%d samples", len(samples))
	}
	for _, s := range samples {
		if !s.OK() {
			t.Fatalf("request %d failed: %s %s", s.Index, s.Error, s.ErrorMessage)
		}
		if s.TTFT < 60*time.Millisecond || s.TTFT > 5*time.Second {
			t.Errorf("request %d: TTFT %s, want ≥ 60ms", s.Index, s.TTFT)
		}
		if len(s.ITLs) != 4 {
			t.Fatalf("request %d: %d ITLs, want 4", s.Index, len(s.ITLs))
		}
		// The server sleeps 60 ms, then 25 ms before each further token: the last token cannot
		// arrive before 160 ms (single gaps may shrink when an earlier token was delayed).
		last := s.TTFT
		for _, g := range s.ITLs {
			if g <= 0 || g > 5*time.Second {
				t.Errorf("request %d: ITL %s", s.Index, g)
			}
			last += g
		}
		if last < 160*time.Millisecond || s.E2E < last {
			t.Errorf("request %d: last token at %s (want ≥ 160ms), E2E %s", s.Index, last, s.E2E)
		}
		if s.OutputTokens != 5 || s.PromptTokens != 40 || s.CachedTokens != 16 {
			t.Errorf("request %d: tokens out %d prompt %d cached %d", s.Index, s.OutputTokens, s.PromptTokens, s.CachedTokens)
		}
		if s.Endpoint != "10.0.0.1:8000" || s.Cluster != "c1" || s.ServedRegion != "us-east-1" || s.Route != "local" {
			t.Errorf("request %d: headers %q %q %q %q", s.Index, s.Endpoint, s.Cluster, s.ServedRegion, s.Route)
		}
	}
}

func TestErrorsAreCounted(t *testing.T) {
	tests := []struct {
		mode string
		want loadgen.ErrorKind
	}{
		{"500", loadgen.ErrHTTP5xx},
		{"429", loadgen.ErrHTTP429},
		{"broken", loadgen.ErrStream},
		{"sse-error", loadgen.ErrSSE},
		{"error-chunk", loadgen.ErrSSE},
		{"garbage", loadgen.ErrStream},
		{"empty", loadgen.ErrEmpty},
		{"no-done", loadgen.ErrStream},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			url := (&loadgentest.Server{Tokens: 5, Mode: tt.mode}).Start(t)
			res := run(
				t,
				loadgen.Config{Workload: testWorkload(t, 20, 200*time.Millisecond)},
				loadgen.Target{Name: "x", URL: url},
			)
			if len(res.Targets[0].Samples) == 0 {
				t.Fatal("no samples")
			}
			for _, s := range res.Targets[0].Samples {
				if s.Error != tt.want || s.TTFT != 0 || s.ErrorMessage == "" {
					t.Fatalf(
						"request %d: error %q (%s) TTFT %s, want %q and no TTFT",
						s.Index,
						s.Error,
						s.ErrorMessage,
						s.TTFT,
						tt.want,
					)
				}
			}
		})
	}
}

func TestTransportErrorAndTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	res := run(
		t,
		loadgen.Config{Workload: testWorkload(t, 20, 200*time.Millisecond)},
		loadgen.Target{Name: "dead", URL: dead},
	)
	for _, s := range res.Targets[0].Samples {
		if s.Error != loadgen.ErrTransport {
			t.Fatalf("dead target: error %q", s.Error)
		}
	}
	slow := (&loadgentest.Server{Tokens: 5, TTFT: 2 * time.Second}).Start(t)
	cfg := loadgen.Config{Workload: testWorkload(t, 20, 200*time.Millisecond), RequestTimeout: 100 * time.Millisecond}
	for _, s := range run(t, cfg, loadgen.Target{Name: "slow", URL: slow}).Targets[0].Samples {
		if s.Error != loadgen.ErrTimeout {
			t.Fatalf("slow target: error %q", s.Error)
		}
	}
}

func TestOpenLoopNotSlowedBySlowResponses(t *testing.T) {
	url := (&loadgentest.Server{Tokens: 2, TTFT: 400 * time.Millisecond}).Start(t)
	res := run(
		t,
		loadgen.Config{Workload: testWorkload(t, 40, 500*time.Millisecond)},
		loadgen.Target{Name: "slow", URL: url},
	)
	samples := res.Targets[0].Samples
	if len(samples) < 8 {
		t.Fatalf("%d samples", len(samples))
	}
	for _, s := range samples {
		// Sent one after the other, the last would leave seconds late.
		if lag := s.Sent - s.Scheduled; lag > time.Second {
			t.Errorf("request %d sent %s after its arrival time", s.Index, lag)
		}
	}
}

func TestMaxInFlightCountsOverload(t *testing.T) {
	f := &loadgentest.Server{Tokens: 2, Gate: make(chan struct{})}
	url := f.Start(t)
	w := testWorkload(t, 50, 400*time.Millisecond)
	reqs, _ := workload.Generate(w, w.Seed)
	go func() { time.Sleep(1500 * time.Millisecond); close(f.Gate) }() // long after the last arrival
	res := run(t, loadgen.Config{Workload: w, MaxInFlight: 2}, loadgen.Target{Name: "x", URL: url})
	var overload, ok int
	for _, s := range res.Targets[0].Samples {
		switch s.Error {
		case loadgen.ErrOverload:
			overload++
		case "":
			ok++
		}
	}
	if ok != 2 || overload != len(reqs)-2 || len(res.Targets[0].Samples) != len(reqs) {
		t.Fatalf(
			"ok %d overload %d of %d samples, %d requests; want 2 ok and the rest overload",
			ok,
			overload,
			len(res.Targets[0].Samples),
			len(reqs),
		)
	}
}

func TestTargetsGetTheSameSequenceTogether(t *testing.T) {
	a, b := &loadgentest.Server{Tokens: 2}, &loadgentest.Server{Tokens: 2}
	sa, sb := a.Start(t), b.Start(t)
	w := testWorkload(t, 15, time.Second)
	reqs, _ := workload.Generate(w, w.Seed)
	res := run(
		t,
		loadgen.Config{Workload: w},
		loadgen.Target{Name: "a", URL: sa},
		loadgen.Target{Name: "b", URL: sb + "/v1"},
	)
	if len(res.Targets) != 2 || res.Targets[0].Name != "a" || res.Targets[1].Name != "b" {
		t.Fatalf("targets %+v", res.Targets)
	}
	if a.Requests() != len(reqs) || b.Requests() != len(reqs) {
		t.Fatalf("a got %d, b got %d, want %d each", a.Requests(), b.Requests(), len(reqs))
	}
	for i := range reqs {
		ba, _ := a.Body(i)
		bb, _ := b.Body(i)
		if ba == "" || ba != bb {
			t.Fatalf("request %d differs: %q vs %q", i, ba, bb)
		}
		// Sent one target after the other, the same request would arrive a second apart.
		if d := a.Arrival(i).Sub(b.Arrival(i)).Abs(); d > 400*time.Millisecond {
			t.Errorf("request %d reached the targets %s apart", i, d)
		}
	}
	for i, s := range res.Targets[1].Samples {
		if s.Index != i || !s.OK() {
			t.Fatalf("sample %d: index %d error %q %s", i, s.Index, s.Error, s.ErrorMessage)
		}
	}
}

func TestClosedLoopKeepsConcurrency(t *testing.T) {
	f := &loadgentest.Server{Tokens: 3, ITL: 5 * time.Millisecond, TTFT: 10 * time.Millisecond}
	url := f.Start(t)
	w, err := workload.Parse("closed.yaml", []byte(`
duration: 400ms
arrival: {process: closed, concurrency: 3}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, loadgen.Config{Workload: w}, loadgen.Target{Name: "x", URL: url})
	n := len(res.Targets[0].Samples)
	if f.MaxInFlight() != 3 || n < 6 {
		t.Fatalf("max concurrent %d (want 3), %d requests", f.MaxInFlight(), n)
	}
	for i, s := range res.Targets[0].Samples {
		if s.Index != i || !s.OK() {
			t.Fatalf("sample %d: index %d error %q", i, s.Index, s.Error)
		}
	}
}

func TestConnectionsAreReused(t *testing.T) {
	f := &loadgentest.Server{Tokens: 3}
	url := f.Start(t)
	w, err := workload.Parse("closed.yaml", []byte(`
duration: 300ms
arrival: {process: closed, concurrency: 2}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, loadgen.Config{Workload: w}, loadgen.Target{Name: "x", URL: url})
	// Two workers need two connections; a connection returns to the pool a moment after its
	// response ends, so allow a few more, far from one per request.
	if n := len(res.Targets[0].Samples); n < 10 || f.Connections() > 5 {
		t.Fatalf("%d requests over %d connections; want ≥ 10 over ≤ 5", n, f.Connections())
	}
}

func TestRegionalTargets(t *testing.T) {
	east, west := &loadgentest.Server{Tokens: 2}, &loadgentest.Server{Tokens: 2}
	se, sw := east.Start(t), west.Start(t)
	w, err := workload.Parse("regions.yaml", []byte(`
duration: 300ms
regions:
  - {name: east, arrival: {process: poisson, rate: 40}}
  - {name: west, arrival: {process: poisson, rate: 40}}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	target, err := loadgen.ParseTarget("sy=east@" + se + ",west@" + sw)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, loadgen.Config{Workload: w}, target)
	for _, s := range res.Targets[0].Samples {
		srv := east
		if s.Region == "west" {
			srv = west
		}
		if _, ok := srv.Body(s.Index); !ok || !s.OK() {
			t.Fatalf("request %d of region %s not served by its region (error %q)", s.Index, s.Region, s.Error)
		}
	}
	bad := loadgen.Target{Name: "x", RegionURLs: map[string]string{"east": se}}
	if _, err := loadgen.Run(
		context.Background(),
		loadgen.Config{Workload: w},
		[]loadgen.Target{bad},
	); err == nil ||
		!strings.Contains(err.Error(), "west") {
		t.Fatalf("missing region URL: err %v", err)
	}
}

func TestCancelReturnsPartialResult(t *testing.T) {
	url := (&loadgentest.Server{Tokens: 2, TTFT: 5 * time.Second}).Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := loadgen.Run(
		ctx,
		loadgen.Config{Workload: testWorkload(t, 20, 10*time.Second)},
		[]loadgen.Target{{Name: "x", URL: url}},
	)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil {
		t.Fatalf("err %v, result %v", err, res)
	}
	if n := len(res.Targets[0].Samples); n == 0 || n > 50 {
		t.Fatalf("%d samples after 300ms of 20 req/s", n)
	}
	for _, s := range res.Targets[0].Samples {
		if s.Error != loadgen.ErrCanceled {
			t.Fatalf("request %d: %q", s.Index, s.Error)
		}
	}
}

func TestProgressLines(t *testing.T) {
	url := (&loadgentest.Server{Tokens: 2}).Start(t)
	var out syncBuffer
	run(
		t,
		loadgen.Config{
			Workload:         testWorkload(t, 20, 350*time.Millisecond),
			Progress:         &out,
			ProgressInterval: 100 * time.Millisecond,
		},
		loadgen.Target{Name: "x", URL: url},
	)
	if got := out.String(); !strings.Contains(got, "loadgen test") || !strings.Contains(got, "x: done=") {
		t.Fatalf("progress output %q", got)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    loadgen.Target
		wantErr bool
	}{
		{"http://127.0.0.1:8080", loadgen.Target{Name: "127.0.0.1:8080", URL: "http://127.0.0.1:8080"}, false},
		{"rr=http://127.0.0.1:1/v1", loadgen.Target{Name: "rr", URL: "http://127.0.0.1:1/v1"}, false},
		{
			"sy=us@http://127.0.0.1:1,eu@http://127.0.0.1:2",
			loadgen.Target{Name: "sy", RegionURLs: map[string]string{"us": "http://127.0.0.1:1", "eu": "http://127.0.0.1:2"}},
			false,
		},
		{"http://127.0.0.1:1/?a=b", loadgen.Target{Name: "127.0.0.1:1", URL: "http://127.0.0.1:1/?a=b"}, false},
		{"rr=ftp://x", loadgen.Target{}, true},
		{"rr=", loadgen.Target{}, true},
		{"rr=http://127.0.0.1:1,http://127.0.0.1:2", loadgen.Target{}, true},
	}
	for _, tt := range tests {
		got, err := loadgen.ParseTarget(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%q: %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	w := testWorkload(t, 10, 100*time.Millisecond)
	good := loadgen.Target{Name: "a", URL: "http://127.0.0.1:1"}
	tests := []struct {
		name    string
		cfg     loadgen.Config
		targets []loadgen.Target
		want    string
	}{
		{"no workload", loadgen.Config{}, []loadgen.Target{good}, "workload: required"},
		{"no targets", loadgen.Config{Workload: w}, nil, "at least one"},
		{"duplicate names", loadgen.Config{Workload: w}, []loadgen.Target{good, good}, "used twice"},
		{"no name", loadgen.Config{Workload: w}, []loadgen.Target{{URL: "http://127.0.0.1:1"}}, "name must be set"},
		{"bad URL", loadgen.Config{Workload: w}, []loadgen.Target{{Name: "a", URL: "127.0.0.1:1"}}, "bad URL"},
		{
			"bad region URL",
			loadgen.Config{Workload: w},
			[]loadgen.Target{{Name: "a", URL: "http://127.0.0.1:1", RegionURLs: map[string]string{"r": "x"}}},
			"bad URL",
		},
		{
			"regions only",
			loadgen.Config{Workload: w},
			[]loadgen.Target{{Name: "a", RegionURLs: map[string]string{"r": "http://127.0.0.1:1"}}},
			"no regions",
		},
		{"negative cap", loadgen.Config{Workload: w, MaxInFlight: -1}, []loadgen.Target{good}, "max in flight"},
		{
			"negative timeout",
			loadgen.Config{Workload: w, RequestTimeout: -time.Second},
			[]loadgen.Target{good},
			"request timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadgen.Run(context.Background(), tt.cfg, tt.targets)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}
