package scrape_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

func TestParseMetricSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    scrape.MetricSpec
		wantErr string
	}{
		{"", scrape.MetricSpec{}, ""},
		{"vllm:num_requests_waiting", scrape.MetricSpec{Name: "vllm:num_requests_waiting"}, ""},
		{"nv_trt_llm_request_metrics{request_type=waiting}", scrape.MetricSpec{Name: "nv_trt_llm_request_metrics",
			Labels: []scrape.LabelMatch{{Name: "request_type", Value: "waiting"}}}, ""},
		{
			` m{a = "x", b=y} `,
			scrape.MetricSpec{Name: "m", Labels: []scrape.LabelMatch{{Name: "a", Value: "x"}, {Name: "b", Value: "y"}}},
			"",
		},
		{
			`"sglang:num_queue_reqs"`,
			scrape.MetricSpec{Name: "sglang:num_queue_reqs"},
			"",
		}, // a chart's --flag="value" argument
		{"m{a=x", scrape.MetricSpec{}, "want name{label=value"},
		{"m{a=x}z", scrape.MetricSpec{}, "want name{label=value"},
		{"m{a}", scrape.MetricSpec{}, `label "a"`},
		{"m{a=}", scrape.MetricSpec{}, `label "a="`},
		{"m{=x}", scrape.MetricSpec{}, `label "=x"`},
		{"{a=x}", scrape.MetricSpec{}, "empty metric name"},
		{"bad-name", scrape.MetricSpec{}, `byte '-'`},
		// a label asked for twice could never match (a series has one value per label): the
		// signal would read nothing, silently
		{"m{a=x,a=y}", scrape.MetricSpec{}, `label "a" given twice`},
		{"m{a=x, a=x}", scrape.MetricSpec{}, `label "a" given twice`},
		{strings.Repeat("m", 64), scrape.MetricSpec{}, "longer than 63 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := scrape.ParseMetricSpec(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if again, err := scrape.ParseMetricSpec(got.String()); err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("String() %q does not parse back: %+v, %v", got.String(), again, err)
			}
		})
	}
}

func spec(t *testing.T, s string) *scrape.MetricSpec {
	t.Helper()
	m, err := scrape.ParseMetricSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

// The metric flags of GIE's chart for Triton with TensorRT-LLM select series of one family by
// a label; others replace a family's name, or turn a signal off.
func TestParseWithFamilies(t *testing.T) {
	triton, err := os.ReadFile("testdata/triton.txt")
	if err != nil {
		t.Fatal(err)
	}
	vllm, err := os.ReadFile("testdata/vllm.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		page     []byte
		families scrape.Families
		want     datastore.Metrics
		wantErr  error
	}{
		{"triton, as GIE's chart sets it", triton, scrape.Families{
			Waiting: spec(t, "nv_trt_llm_request_metrics{request_type=waiting}"),
			KVUsage: spec(t, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}"),
			LoRA:    spec(t, ""),
		}, datastore.Metrics{WaitingQueue: 4, KVUsage: 0.375}, nil},
		{"one family feeds two signals", triton, scrape.Families{
			Waiting: spec(t, "nv_trt_llm_request_metrics{request_type=waiting}"),
			Running: spec(t, "nv_trt_llm_request_metrics{request_type=scheduled}"),
			KVUsage: spec(t, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}"),
		}, datastore.Metrics{WaitingQueue: 4, Running: 6, KVUsage: 0.375}, nil},
		{"no selector sums every series", triton, scrape.Families{Waiting: spec(t, "nv_trt_llm_request_metrics")},
			datastore.Metrics{WaitingQueue: 529}, nil},
		{"the engine's families are not read", triton, scrape.Families{}, datastore.Metrics{}, scrape.ErrNoFamilies},
		{
			"lora off",
			vllm,
			scrape.Families{LoRA: spec(t, "")},
			datastore.Metrics{
				WaitingQueue:  3,
				Running:       12,
				KVUsage:       0.4123,
				KVBlockSize:   16,
				KVTotalBlocks: 27189,
				PrefixHits:    65432,
				PrefixQueries: 123456,
			},
			nil,
		},
		{
			"a replaced family is read under its new name only",
			vllm,
			scrape.Families{Waiting: spec(t, "vllm:num_requests_running")},
			datastore.Metrics{
				WaitingQueue: 12, Running: 12, KVUsage: 0.4123, KVBlockSize: 16, KVTotalBlocks: 27189,
				ActiveAdapters: []string{"sql-lora", "chat-lora"}, WaitingAdapters: []string{"tweet-lora"}, MaxLoRA: 4,
				PrefixHits: 65432, PrefixQueries: 123456,
			},
			nil,
		},
		{"lora and cache info by their vllm names", vllm, scrape.Families{
			LoRA: spec(t, "vllm:lora_requests_info"), CacheInfo: spec(t, "vllm:cache_config_info"),
		}, datastore.Metrics{
			WaitingQueue: 3, Running: 12, KVUsage: 0.4123, KVBlockSize: 16, KVTotalBlocks: 27189,
			ActiveAdapters: []string{"sql-lora", "chat-lora"}, WaitingAdapters: []string{"tweet-lora"}, MaxLoRA: 4,
			PrefixHits: 65432, PrefixQueries: 123456,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scrape.ParseWith(strings.NewReader(string(tt.page)), datastore.EngineVLLM, tt.families)
			if tt.wantErr != nil {
				if err != tt.wantErr {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.KVUsage = round(got.KVUsage)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// GIE's --model-server-metrics-port, -path, -scheme and -https-insecure-skip-verify: the
// metrics page is read over TLS on another port and path than the pod serves on, and
// /v1/models still on the serving port.
func TestScrapeMetricsPortPathScheme(t *testing.T) {
	pod := newFakeServer(t, datastore.EngineVLLM, vllmModels)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /prometheus/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, vllmPage(9)) })
	metrics := httptest.NewTLSServer(mux)
	t.Cleanup(metrics.Close)
	_, port, _ := net.SplitHostPort(metrics.Listener.Addr().String())
	for _, verify := range []bool{false, true} {
		t.Run(fmt.Sprintf("verify=%v", verify), func(t *testing.T) {
			cfg := testConfig()
			cfg.MetricsPort, _ = strconv.Atoi(port)
			cfg.MetricsPath, cfg.MetricsScheme, cfg.MetricsInsecureSkipVerify = "/prometheus/metrics", "https", !verify
			store := datastore.NewStore(nil, nil)
			store.Sync([]datastore.EndpointSpec{{Address: pod.addr(), Engine: datastore.EngineVLLM}})
			reg := prometheus.NewRegistry()
			s, err := scrape.New(cfg, store, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			ep := store.Get(pod.addr())
			if verify { // the test server's certificate is not trusted: every scrape fails
				poll.Until(t, waitTimeout, func() bool { return ep.ScrapeFailures() >= 2 && ep.Models() != nil }, "scrape failures")
				if ep.Metrics() != nil || pod.scrapes.Load() != 0 {
					t.Fatalf("metrics %+v, pod scraped %d times", ep.Metrics(), pod.scrapes.Load())
				}
				return
			}
			poll.Until(t, waitTimeout, func() bool {
				m := ep.Metrics()
				return m != nil && m.WaitingQueue == 9 && ep.Models() != nil
			}, "metrics over TLS and models")
			if pod.scrapes.Load() != 0 {
				t.Fatalf("the serving port's /metrics was read %d times", pod.scrapes.Load())
			}
		})
	}
}

func TestConfigValidateGIEFields(t *testing.T) {
	bad := []struct {
		name   string
		mutate func(*scrape.Config)
		want   string
	}{
		{"port", func(c *scrape.Config) { c.MetricsPort = 70000 }, "MetricsPort"},
		{"scheme", func(c *scrape.Config) { c.MetricsScheme = "ftp" }, "MetricsScheme"},
		{"family name", func(c *scrape.Config) { c.Families.Waiting = &scrape.MetricSpec{Name: "a b"} }, "Families"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c := scrape.DefaultConfig()
			tt.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error naming %s", err, tt.want)
			}
		})
	}
}
