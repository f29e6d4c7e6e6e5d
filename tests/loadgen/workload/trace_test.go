package workload_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// testdata returns the absolute path of one of package trace's synthetic traces.
func testdata(t *testing.T, file string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "trace", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// traceWorkload loads a trace workload written to a temporary file; extra adds YAML lines under
// trace:, top adds top-level lines.
func traceWorkload(t *testing.T, format, path, top, extra string) *workload.Workload {
	t.Helper()
	head := "name: t\n"
	for _, d := range []string{"seed: 7\n", "duration: 60s\n", "endpoint: completions\n"} {
		key, _, _ := strings.Cut(d, ":")
		if !strings.Contains(top, key+":") {
			head += d
		}
	}
	src := fmt.Sprintf("%s%strace:\n  format: %s\n  path: %s\n%s", head, top, format, path, extra)
	file := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := workload.Load(file)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, src)
	}
	return w
}

func TestTraceReplay(t *testing.T) {
	mooncake, azure := testdata(t, "mooncake.jsonl"), testdata(t, "azure.csv")
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name, format, path, top, extra string
		wantAt                         []time.Duration
		wantTokens, wantMax            []int
	}{
		{name: "mooncake whole", format: "mooncake", path: mooncake,
			wantAt:     ms(0, 0, 250, 600, 900, 1300, 1750, 2100),
			wantTokens: []int{1200, 700, 1500, 2048, 300, 1100, 2500, 520}, wantMax: []int{40, 12, 30, 20, 8, 25, 16, 1}},
		{name: "twice the rate", format: "mooncake", path: mooncake, extra: "  time_scale: 2\n",
			wantAt: ms(0, 0, 125, 300, 450, 650, 875, 1050)},
		{
			name:   "half the rate, 2 s window",
			format: "mooncake",
			path:   mooncake,
			top:    "duration: 2s\n",
			extra:  "  time_scale: 0.5\n",
			wantAt: ms(0, 0, 500, 1200, 1800),
		}, // 1 s of the recording, stretched to 2
		{
			name:       "window from 500 ms for 1 s",
			format:     "mooncake",
			path:       mooncake,
			top:        "duration: 1s\n",
			extra:      "  start: 500ms\n",
			wantAt:     ms(100, 400, 800),
			wantTokens: []int{2048, 300, 1100},
		},
		{name: "at most 3 requests", format: "mooncake", path: mooncake, extra: "  max_requests: 3\n",
			wantAt: ms(0, 0, 250)},
		// A block stands for 128 tokens; the last block's share scales alike (176 → 44, 188 → 47).
		{
			name:       "quarter-length prompts, double outputs",
			format:     "mooncake",
			path:       mooncake,
			extra:      "  prompt_scale: 0.25\n  output_scale: 2\n  max_requests: 3\n",
			wantAt:     ms(0, 0, 250),
			wantTokens: []int{300, 175, 375},
			wantMax:    []int{80, 24, 60},
		},
		{name: "azure whole", format: "azure", path: azure,
			wantAt:     ms(0, 250, 250, 800, 1100, 1550, 1900, 2300),
			wantTokens: []int{640, 120, 2300, 75, 980, 410, 1500, 260}, wantMax: []int{48, 10, 64, 5, 33, 21, 1, 18}},
		{
			name:       "azure scaled",
			format:     "azure",
			path:       azure,
			extra:      "  time_scale: 4\n  prompt_scale: 0.5\n  output_scale: 0.1\n  max_requests: 2\n",
			wantAt:     ms(0, 63),
			wantTokens: []int{320, 60},
			wantMax:    []int{5, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := traceWorkload(t, tc.format, tc.path, tc.top, tc.extra)
			reqs := mustGenerate(t, w, w.Seed)
			if len(reqs) != len(tc.wantAt) {
				t.Fatalf("%d requests, want %d", len(reqs), len(tc.wantAt))
			}
			for i, r := range reqs {
				if r.Index != i || r.At.Round(time.Millisecond) != tc.wantAt[i] {
					t.Errorf("request %d: index %d at %v, want at %v", i, r.Index, r.At, tc.wantAt[i])
				}
				if tc.wantTokens != nil &&
					(r.PromptTokens != tc.wantTokens[i] || len(r.Text()) != tc.wantTokens[i]*workload.CharsPerToken) {
					t.Errorf("request %d: %d prompt tokens (%d bytes), want %d", i, r.PromptTokens, len(r.Text()), tc.wantTokens[i])
				}
				if tc.wantMax != nil && r.MaxTokens != tc.wantMax[i] {
					t.Errorf("request %d: max_tokens %d, want %d", i, r.MaxTokens, tc.wantMax[i])
				}
			}
			again := mustGenerate(t, w, w.Seed)
			other := mustGenerate(t, w, w.Seed+1)
			for i := range reqs {
				if again[i].Text() != reqs[i].Text() {
					t.Fatalf("request %d: the same seed gave another prompt", i)
				}
				if len(reqs[i].Text()) > 64 && other[i].Text() == reqs[i].Text() {
					t.Fatalf("request %d: another seed gave the same prompt", i)
				}
			}
		})
	}
}

// cachedTokens runs the prompts of reqs one after the other through one simulated modelsim pod,
// as loadgen encodes them and modelsim's HTTP handlers convert them, and returns the prompt tokens
// each found in the prefix cache. It also checks that the pod generates exactly max_tokens.
func cachedTokens(t *testing.T, reqs []workload.Request, idx ...int) []int {
	t.Helper()
	sim, err := engine.NewSimulator(engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.Model = reqs[0].Model
	var out []int
	for k, i := range idx {
		r := reqs[i]
		body, err := loadgen.EncodeRequest(&r, true, true)
		if err != nil {
			t.Fatal(err)
		}
		er, err := scfg.EngineRequest(body, r.Endpoint == workload.Chat)
		if err != nil {
			t.Fatal(err)
		}
		if er.MaxTokens != r.MaxTokens {
			t.Errorf("request %d: modelsim generates %d tokens, max_tokens %d", i, er.MaxTokens, r.MaxTokens)
		}
		h, err := sim.Submit(time.Duration(k)*time.Minute, er)
		if err != nil {
			t.Fatal(err)
		}
		sim.Run()
		p := h.Progress()
		if p.Generated != r.MaxTokens {
			t.Errorf("request %d: generated %d tokens, want max_tokens %d", i, p.Generated, r.MaxTokens)
		}
		out = append(out, p.CachedTokens)
	}
	return out
}

// TestTracePrefixes checks that prompts built from hash ids share exactly the blocks of their
// common leading ids, as modelsim's prefix cache counts them, and that Azure prompts share none.
func TestTracePrefixes(t *testing.T) {
	mooncake, azure := testdata(t, "mooncake.jsonl"), testdata(t, "azure.csv")
	// The synthetic trace's ids: 0 [0 1 2] 1200 tokens; 1 [0 3] 700; 2 [0 1 8] 1500; 3 [0 1 4 5] 2048;
	// 4 [6] 300; 5 [0 3 7] 1100; 6 [0 1 4 5 9] 2500; 7 [10 11] 520.
	tests := []struct {
		name, format, path, top, extra string
		order                          []int // requests sent one after the other to one pod
		want                           []int // cached tokens of each
	}{
		{name: "shared leading ids", format: "mooncake", path: mooncake, order: []int{0, 2, 3, 6, 1, 5, 4, 7},
			// 2 shares [0 1] with 0; 3 shares [0 1]; 6 shares [0 1 4 5] with 3; 1 shares [0]; 5
			// shares [0 3] with 1, whose block 3 is its cut last one (188 tokens): 700 tokens in
			// common, of which the cache holds whole 16-token blocks, 688; 4 and 7 share nothing.
			want: []int{0, 1024, 1024, 2048, 512, 688, 0, 0}},
		{name: "a cut block is a prefix of the whole one", format: "mooncake", path: mooncake, order: []int{5, 1},
			// 1 [0 3] is the first 700 tokens of 5 [0 3 7]; the last token is always computed, and
			// the cache counts whole 16-token blocks: (700-1) rounded down to 688.
			want: []int{0, 688}},
		{name: "chat", format: "mooncake", path: mooncake, top: "endpoint: chat\n", order: []int{0, 2, 6},
			// The chat template's 9-byte head is in every prompt: the shared blocks are the same.
			want: []int{0, 1024, 1024}},
		{
			name:   "quarter-length blocks",
			format: "mooncake",
			path:   mooncake,
			extra:  "  prompt_scale: 0.25\n",
			order:  []int{0, 2, 3, 6},
			want:   []int{0, 256, 256, 512},
		},
		{name: "azure shares nothing", format: "azure", path: azure, order: []int{0, 1, 2, 3, 4, 5, 6, 7},
			want: []int{0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := traceWorkload(t, tc.format, tc.path, tc.top, tc.extra)
			reqs := mustGenerate(t, w, w.Seed)
			got := cachedTokens(t, reqs, tc.order...)
			for k := range got {
				if got[k] != tc.want[k] {
					t.Errorf("request %d: %d cached tokens, want %d (all: %v, want %v)", tc.order[k], got[k], tc.want[k], got, tc.want)
					break
				}
			}
		})
	}
}

func TestTraceWorkloadErrors(t *testing.T) {
	mooncake := testdata(t, "mooncake.jsonl")
	tests := []struct {
		name, src, want string
	}{
		{"arrival too", "arrival: {process: poisson, rate: 1}\n", "arrival: exclusive with trace"},
		{"prompt too", "prompt: {dist: fixed, value: 5}\n", "prompt: exclusive with trace"},
		{"output too", "output: {dist: fixed, value: 5}\n", "output: exclusive with trace"},
		{"load", "load: 0.5\n", "load: exclusive with trace"},
		{"bad format", "trace: {format: parquet, path: x}\n", `trace.format: "parquet" is not mooncake or azure`},
		{"no path", "trace: {format: azure}\n", "trace.path: required"},
		{"negative time scale", "trace: {format: azure, path: x, time_scale: -1}\n", "trace.time_scale: must be in (0,1000]"},
		{
			"huge prompt scale",
			"trace: {format: azure, path: x, prompt_scale: 100}\n",
			"trace.prompt_scale: must be in (0,16]",
		},
		{"negative start", "trace: {format: azure, path: x, start: -1s}\n", "trace.start: must be in"},
		{"negative max", "trace: {format: azure, path: x, max_requests: -1}\n", "trace.max_requests: must be >= 0"},
		{"unknown field", "trace: {format: azure, path: x, speed: 2}\n", "field speed not found"},
		{"empty slo", "slo: {}\n", "slo.ttft, tpot: set at least one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: t\n" + tc.src
			if !strings.Contains(tc.src, "trace:") {
				src += "trace: {format: mooncake, path: " + mooncake + "}\n"
			}
			_, err := workload.Parse("t.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}

	w := traceWorkload(t, "azure", "absent.csv", "", "")
	_, err := workload.Generate(w, 1)
	if !errors.Is(err, workload.ErrTraceMissing) ||
		!strings.Contains(err.Error(), filepath.Join(filepath.Dir(w.Trace.File()), "absent.csv")) {
		t.Errorf("missing trace: %v, want ErrTraceMissing naming the resolved path", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(
		bad,
		[]byte(`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}`+"\n{}\n"),
		0o644,
	); err != nil {
		t.Fatal(err)
	}
	w = traceWorkload(t, "mooncake", bad, "", "")
	if _, err := workload.Generate(w, 1); err == nil || !strings.Contains(err.Error(), "line 2: timestamp: missing") {
		t.Errorf("bad record: %v, want its line", err)
	}
	if _, err := w.WithRate(3); err == nil || !strings.Contains(err.Error(), "replays a trace") {
		t.Errorf("WithRate on a trace: %v", err)
	}
	if _, err := w.WithCapacity(3); err == nil || !strings.Contains(err.Error(), "replays a trace") {
		t.Errorf("WithCapacity on a trace: %v", err)
	}
	steady, _ := workload.Load("mixed-fleet")
	if _, err := steady.WithTrace(func(t *workload.Trace) { t.TimeScale = 2 }); err == nil {
		t.Error("WithTrace on a workload without a trace succeeded")
	}
}

// TestTracePathResolution: a relative path is taken from the workload file's directory; one set
// with WithTrace from the working directory.
func TestTracePathResolution(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(testdata(t, "azure.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conv.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(
		file,
		[]byte("name: t\ntrace: {format: azure, path: conv.csv, max_requests: 2}\n"),
		0o644,
	); err != nil {
		t.Fatal(err)
	}
	w, err := workload.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := mustGenerate(t, w, 1); len(reqs) != 2 {
		t.Errorf("%d requests, want 2", len(reqs))
	}
	w2, err := w.WithTrace(func(tr *workload.Trace) { tr.Path = "./conv.csv" })
	if err != nil {
		t.Fatal(err)
	}
	if w2.Trace.File() != "./conv.csv" {
		t.Errorf("path set by WithTrace resolved to %q, want it as given", w2.Trace.File())
	}
	if w.Trace.File() != filepath.Join(dir, "conv.csv") {
		t.Errorf("WithTrace changed the original: %q", w.Trace.File())
	}
}

func TestSLOMet(t *testing.T) {
	slo := workload.SLO{TTFT: time.Second, TPOT: 50 * time.Millisecond}
	tests := []struct {
		ttft, e2e time.Duration
		tokens    int
		want      bool
	}{
		{500 * time.Millisecond, 5500 * time.Millisecond, 101, true},  // 50 ms a token
		{500 * time.Millisecond, 5600 * time.Millisecond, 101, false}, // 51 ms a token
		{1001 * time.Millisecond, 1001 * time.Millisecond, 1, false},
		{time.Second, 10 * time.Second, 1, true}, // one token: no per-token time
	}
	for _, tc := range tests {
		if got := slo.Met(tc.ttft, tc.e2e, tc.tokens); got != tc.want {
			t.Errorf("Met(%v, %v, %d) = %v, want %v", tc.ttft, tc.e2e, tc.tokens, got, tc.want)
		}
	}
}

// TestTraceLengthBound: a length scaled past the workload's token bound is an error naming the
// record's line, not a gigantic prompt.
func TestTraceLengthBound(t *testing.T) {
	file := filepath.Join(t.TempDir(), "big.csv")
	src := "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-01-01 00:00:00,10,1\n2024-01-01 00:00:01,1000000,1\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w := traceWorkload(t, "azure", file, "", "  prompt_scale: 2\n")
	if _, err := workload.Generate(
		w,
		1,
	); err == nil ||
		!strings.Contains(err.Error(), "line 3: 2000000 prompt and 1 output tokens after scaling") {
		t.Errorf("error %v, want the scaled length refused on line 3", err)
	}
}

// TestTraceSessions checks that sessions: true gives the turns of one Mooncake conversation (the
// same first two hash ids) one session id, sent as the body's user, and other conversations
// others; without it, or for a trace without hash ids, requests carry none.
func TestTraceSessions(t *testing.T) {
	mooncake, azure := testdata(t, "mooncake.jsonl"), testdata(t, "azure.csv")
	tests := []struct {
		name, format, path, extra string
		want                      []string
	}{
		{name: "mooncake conversations", format: "mooncake", path: mooncake, extra: "  sessions: true\n",
			want: []string{"conv-0-1", "conv-0-3", "conv-0-1", "conv-0-1", "conv-6", "conv-0-3", "conv-0-1", "conv-10-11"}},
		{name: "off by default", format: "mooncake", path: mooncake, want: make([]string, 8)},
		{name: "azure has no conversations", format: "azure", path: azure, extra: "  sessions: true\n",
			want: make([]string, 8)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := traceWorkload(t, tc.format, tc.path, "", tc.extra)
			reqs := mustGenerate(t, w, w.Seed)
			if len(reqs) < len(tc.want) {
				t.Fatalf("%d requests, want at least %d", len(reqs), len(tc.want))
			}
			for i, want := range tc.want {
				if reqs[i].Session != want {
					t.Errorf("request %d: session %q, want %q", i, reqs[i].Session, want)
				}
				body, err := loadgen.EncodeRequest(&reqs[i], false, false)
				if err != nil {
					t.Fatal(err)
				}
				if has := strings.Contains(string(body), `"user":`); has != (want != "") ||
					want != "" && !strings.Contains(string(body), `"user":"`+want+`"`) {
					t.Errorf("request %d: body %.80s... does not carry user %q as it should", i, body, want)
				}
			}
		})
	}
}
