package bbr

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

type staticSource []*datastore.Endpoint

func (s staticSource) Endpoints() []*datastore.Endpoint { return s }

func testEndpoints() staticSource {
	a := datastore.NewEndpoint("10.0.0.1:8000", "", "", nil)
	a.SetModels(&datastore.Models{Base: "llama", Adapters: []string{"sql-lora"}})
	b := datastore.NewEndpoint("10.0.0.2:8000", "", "", nil)
	b.SetModels(&datastore.Models{Base: "llama"})
	b.SetMetrics(&datastore.Metrics{ActiveAdapters: []string{"chat-lora"}})
	c := datastore.NewEndpoint("10.0.0.3:8000", "", "", nil) // models not known yet
	return staticSource{a, b, c}
}

func TestRoute(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 1 << 10
	cfg.Adapters = map[string]string{"ondemand": "llama", "orphan": "mistral"}
	r, err := NewRouter(cfg, testEndpoints())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		body             string
		status           int
		base, adapter    string
		stream, usageOpt bool
	}{
		{"base model", `{"model":"llama","prompt":"hi"}`, 0, "llama", "", false, false},
		{"adapter from models", `{"model":"sql-lora","prompt":"hi","stream":true}`, 0, "llama", "sql-lora", true, false},
		{"adapter from lora metrics", `{"model":"chat-lora","messages":[]}`, 0, "llama", "chat-lora", false, false},
		{
			"adapter from map",
			`{"model":"ondemand","stream":true,"stream_options":{"include_usage":true}}`,
			0,
			"llama",
			"ondemand",
			true,
			true,
		},
		{"mapped to unserved base", `{"model":"orphan"}`, http.StatusNotFound, "", "", false, false},
		{"unknown model", `{"model":"gpt-9"}`, http.StatusNotFound, "", "", false, false},
		{"missing model", `{"prompt":"x"}`, http.StatusBadRequest, "", "", false, false},
		{"malformed", `{"model":`, http.StatusBadRequest, "", "", false, false},
		{
			"too large",
			`{"model":"llama","prompt":"` + strings.Repeat("x", 2000) + `"}`,
			http.StatusRequestEntityTooLarge,
			"",
			"",
			false,
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req framework.Request
			got, err := r.Route([]byte(tt.body), &req)
			if tt.status != 0 {
				var e *apierror.Error
				if !errors.As(err, &e) || e.Status != tt.status {
					t.Fatalf("err = %v, want status %d", err, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.BaseModel != tt.base || req.Adapter != tt.adapter || got.Stream != tt.stream ||
				got.IncludeUsage != tt.usageOpt {
				t.Fatalf("req = %+v routed = %+v", req, got)
			}
		})
	}
}

func TestRoutePrefixHashesAndTokens(t *testing.T) {
	r, _ := NewRouter(DefaultConfig(), testEndpoints())
	prompt := strings.Repeat("abcdefgh", 40) // 320 bytes, 5 blocks
	var req framework.Request
	body := fmt.Sprintf(
		`{"model":"llama","messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`,
		prompt[:100],
		prompt[100:],
	)
	if _, err := r.Route([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want := prefix.Hashes(nil, "llama", []byte(prompt), 0)
	if fmt.Sprint(req.PrefixHashes) != fmt.Sprint(want) {
		t.Fatalf("hashes = %v, want %v", req.PrefixHashes, want)
	}
	if req.PromptTokens != 80 {
		t.Fatalf("prompt tokens = %d, want 80", req.PromptTokens)
	}
}

func TestParseAdapterMap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "adapters.yaml")
	if err := os.WriteFile(file, []byte("a: base1\nb: base2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"", "map[]", false},
		{"a=base1, b=base2", "map[a:base1 b:base2]", false},
		{file, "map[a:base1 b:base2]", false},
		{"a=", "", true},
		{"=b", "", true},
		{filepath.Join(t.TempDir(), "missing.yaml"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAdapterMap(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && fmt.Sprint(got) != tt.want {
				t.Fatalf("got %v, want %s", got, tt.want)
			}
		})
	}
}

func benchBody(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"llama","stream":true,"max_tokens":128,"messages":[`)
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. \"quoted\"\n", 20)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":%q}`, para)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func benchmarkRoute(b *testing.B, size int) {
	r, _ := NewRouter(DefaultConfig(), testEndpoints())
	body := benchBody(size)
	var req framework.Request
	var lat []time.Duration
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := cpuTime()
	for b.Loop() {
		start := time.Now()
		if _, err := r.Route(body, &req); err != nil {
			b.Fatal(err)
		}
		r.Release(&req)
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat, cpuTime()-cpu)
}

// reportPercentiles adds the 50th and 99th percentile of per-iteration durations and the
// process CPU time per iteration (cpu is the total), in microseconds, to the benchmark's output.
// On a shared machine the CPU time is the steadier figure: waiting for a core does not count.
func reportPercentiles(b *testing.B, lat []time.Duration, cpu time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[(len(lat)-1)/2])/float64(time.Microsecond), "p50-us")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100])/float64(time.Microsecond), "p99-us")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(len(lat)), "cpu-us/op")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkRoute100KB(b *testing.B) { benchmarkRoute(b, 100<<10) }
func BenchmarkRoute1MB(b *testing.B)   { benchmarkRoute(b, 1<<20) }

func BenchmarkParse1MB(b *testing.B) {
	body := benchBody(1 << 20)
	var parsed openai.Body
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := openai.Parse(body, &parsed); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRouteBeforeAnyModelList checks what a model no endpoint is known to serve gets: 503 with
// Retry-After while no endpoint's model list has been read (a gateway just started: the model
// may well be served), 404 model_not_found once one has, and 404 with no endpoints at all.
func TestRouteBeforeAnyModelList(t *testing.T) {
	unread := func() staticSource {
		return staticSource{datastore.NewEndpoint("10.0.0.1:8000", "", "", nil),
			datastore.NewEndpoint("10.0.0.2:8000", "", "", nil)}
	}
	read := unread()
	read[1].SetModels(&datastore.Models{Base: "llama"})
	tests := []struct {
		name   string
		src    staticSource
		model  string
		status int
	}{
		{"no list read yet", unread(), "llama", http.StatusServiceUnavailable},
		{"one list read, model unknown", read, "gpt-9", http.StatusNotFound},
		{"one list read, model served", read, "llama", 0},
		{"no endpoints", staticSource{}, "llama", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRouter(DefaultConfig(), tt.src)
			if err != nil {
				t.Fatal(err)
			}
			for _, route := range []func() error{
				func() error {
					var req framework.Request
					_, err := r.Route([]byte(`{"model":"`+tt.model+`","prompt":"hi"}`), &req)
					return err
				},
				func() error { var req framework.Request; return r.RouteModel(tt.model, &req) },
			} {
				err := route()
				var ae *apierror.Error
				switch {
				case tt.status == 0 && err != nil:
					t.Fatalf("error %v, want the model routed", err)
				case tt.status != 0 && (!errors.As(err, &ae) || ae.Status != tt.status):
					t.Fatalf("error %v, want status %d", err, tt.status)
				case tt.status == http.StatusServiceUnavailable && ae.RetryAfterSeconds < 1:
					t.Fatalf("503 without Retry-After: %+v", ae)
				}
			}
		})
	}
}
