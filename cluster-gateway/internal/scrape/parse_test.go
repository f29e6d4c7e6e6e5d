package scrape_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

func TestParseEngines(t *testing.T) {
	tests := []struct {
		file   string
		engine datastore.Engine
		want   datastore.Metrics
	}{
		{"vllm.txt", datastore.EngineVLLM, datastore.Metrics{
			WaitingQueue: 3, Running: 12, KVUsage: 0.4123, KVBlockSize: 16, KVTotalBlocks: 27189,
			ActiveAdapters: []string{"sql-lora", "chat-lora"}, WaitingAdapters: []string{"tweet-lora"}, MaxLoRA: 4,
			PrefixHits: 65432, PrefixQueries: 123456,
		}},
		{"vllm_old.txt", datastore.EngineVLLM, datastore.Metrics{
			Running: 2, KVUsage: 0.25, PrefixHits: 10, PrefixQueries: 40,
		}},
		{"vllm_dp.txt", datastore.EngineVLLM, datastore.Metrics{
			WaitingQueue: 3, Running: 10, KVUsage: 0.4,
		}},
		{"sglang.txt", datastore.EngineSGLang, datastore.Metrics{
			WaitingQueue: 5, Running: 21, KVUsage: 0.28, KVBlockSize: 1, KVTotalBlocks: 442288,
		}},
		{"trtllm.txt", datastore.EngineTRTLLM, datastore.Metrics{
			WaitingQueue: 2, Running: 7, KVUsage: 0.5, KVBlockSize: 32, KVTotalBlocks: 4096,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := scrape.Parse(f, tt.engine)
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

func round(v float64) float64 { return float64(int64(v*1e6+0.5)) / 1e6 }

func TestParseCases(t *testing.T) {
	tests := []struct {
		name    string
		engine  datastore.Engine
		page    string
		want    datastore.Metrics
		wantErr string
	}{
		{name: "escaped label values", engine: datastore.EngineVLLM,
			page: `vllm:num_requests_waiting{model_name="a \"quoted\" } {name\\",x="l1\nl2"} 4` + "\n" +
				`vllm:lora_requests_info{max_lora="2", running_lora_adapters = "a\"b, c" ,waiting_lora_adapters=""} 5` + "\n",
			want: datastore.Metrics{WaitingQueue: 4, ActiveAdapters: []string{`a"b`, "c"}, MaxLoRA: 2}},
		{name: "crlf, tabs and no trailing newline", engine: datastore.EngineTRTLLM,
			page: "trtllm_num_requests_running\t3\r\n  trtllm_kv_cache_utilization 1.5",
			want: datastore.Metrics{Running: 3, KVUsage: 1}},
		{name: "blank before labels", engine: datastore.EngineVLLM,
			page: "vllm:num_requests_running {engine=\"0\"} 3\n", want: datastore.Metrics{Running: 3}},
		{name: "negative and huge values clamp", engine: datastore.EngineTRTLLM,
			page: "trtllm_num_requests_running -3\ntrtllm_num_requests_waiting 1e300\n",
			want: datastore.Metrics{WaitingQueue: 1<<31 - 1}},
		{name: "unknown engine uses vllm names", engine: "custom",
			page: "vllm:num_requests_running 1\n", want: datastore.Metrics{Running: 1}},
		{name: "bad lines in skipped families are ignored", engine: datastore.EngineVLLM,
			page: "garbage{{{ x\nvllm:num_requests_running 1\n", want: datastore.Metrics{Running: 1}},
		{name: "wrong engine", engine: datastore.EngineSGLang, page: "vllm:num_requests_running 1\n",
			wantErr: scrape.ErrNoFamilies.Error()},
		{name: "empty page", engine: datastore.EngineVLLM, page: "", wantErr: scrape.ErrNoFamilies.Error()},
		{name: "bad value", engine: datastore.EngineVLLM, page: "vllm:num_requests_running abc\n",
			wantErr: "line 1: bad value"},
		{name: "missing value", engine: datastore.EngineVLLM, page: "# c\nvllm:num_requests_running{a=\"b\"}\n",
			wantErr: "line 2: missing value"},
		{name: "name only", engine: datastore.EngineVLLM, page: "vllm:num_requests_running",
			wantErr: "line 1: missing value"},
		{name: "bad timestamp", engine: datastore.EngineVLLM, page: "vllm:num_requests_running 1 x\n",
			wantErr: "bad timestamp"},
		{name: "unterminated labels", engine: datastore.EngineVLLM, page: `vllm:num_requests_running{a="b} 1`,
			wantErr: "unterminated label set"},
		{name: "malformed label", engine: datastore.EngineVLLM, page: `vllm:num_requests_running{1a="b"} 1`,
			wantErr: "malformed label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scrape.Parse(strings.NewReader(tt.page), tt.engine)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	page := "# HELP " + long + "\n" + `vllm:lora_requests_info{running_lora_adapters="` + long + `"} 1` + "\nvllm:num_requests_running 2\n"
	got, err := scrape.Parse(strings.NewReader(page), datastore.EngineVLLM)
	if err != nil {
		t.Fatal(err)
	}
	if got.Running != 2 || len(got.ActiveAdapters) != 1 || len(got.ActiveAdapters[0]) != len(long) {
		t.Fatalf("long lines mis-parsed: running=%d adapters=%d", got.Running, len(got.ActiveAdapters))
	}
	huge := "vllm:num_requests_running" + strings.Repeat(" ", scrape.MaxLineBytes+10) + "1\n"
	if _, err := scrape.Parse(strings.NewReader(huge), datastore.EngineVLLM); !errors.Is(err, scrape.ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"vllm.txt", "vllm_old.txt", "vllm_dp.txt", "sglang.txt", "trtllm.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	f.Add([]byte(`vllm:lora_requests_info{max_lora="1e9",running_lora_adapters="\\\"\n"} -Inf`), uint8(0))
	engines := []datastore.Engine{datastore.EngineVLLM, datastore.EngineSGLang, datastore.EngineTRTLLM}
	f.Fuzz(func(t *testing.T, page []byte, e uint8) {
		m, err := scrape.Parse(strings.NewReader(string(page)), engines[int(e)%len(engines)])
		if err != nil {
			return
		}
		if m.WaitingQueue < 0 || m.Running < 0 || !(m.KVUsage >= 0 && m.KVUsage <= 1) || m.KVBlockSize < 0 ||
			m.KVTotalBlocks < 0 {
			t.Fatalf("out of range: %+v", m)
		}
	})
}

// benchPage is a realistic vLLM /metrics page: the families read plus the many histograms and
// process metrics a real server exports (about 60 KB).
func benchPage() string {
	b, err := os.ReadFile("testdata/vllm.txt")
	if err != nil {
		panic(err)
	}
	var sb strings.Builder
	sb.Write(b)
	model := `model_name="meta-llama/Llama-3.1-8B-Instruct"`
	for _, h := range []string{"time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds",
		"request_queue_time_seconds", "request_inference_time_seconds", "request_prefill_time_seconds",
		"request_decode_time_seconds", "request_prompt_tokens", "request_generation_tokens", "iteration_tokens_total",
		"request_max_num_generation_tokens", "request_params_n", "request_params_max_tokens", "time_per_output_token_seconds"} {
		fmt.Fprintf(&sb, "# HELP vllm:%s Histogram.\n# TYPE vllm:%s histogram\n", h, h)
		for i := range 30 {
			fmt.Fprintf(&sb, "vllm:%s_bucket{engine=\"0\",le=\"%g\",%s} %d.0\n", h, 0.001*float64(int(1)<<(i%20)), model, i*17)
		}
		fmt.Fprintf(&sb, "vllm:%s_count{engine=\"0\",%s} 512.0\nvllm:%s_sum{engine=\"0\",%s} 41.2\n", h, model, h, model)
		fmt.Fprintf(&sb, "vllm:%s_created{engine=\"0\",%s} 1.7327e+09\n", h, model)
	}
	return sb.String()
}

func BenchmarkParseVLLM(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	r := strings.NewReader(page)
	for b.Loop() {
		r.Reset(page)
		if _, err := scrape.Parse(r, datastore.EngineVLLM); err != nil {
			b.Fatal(err)
		}
	}
}
