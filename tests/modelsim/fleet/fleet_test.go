package fleet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

func TestParse(t *testing.T) {
	cfgs, err := fleet.Parse(strings.NewReader(`
- listen: 127.0.0.1:8001
  profile: h100
  model: llama
  lora: [sql, chat]
  max-loras: 2
  seed: 7
- listen: 127.0.0.1:8002
  profile: a10g
  model: llama
  lora: "a, b"
  engine: sglang
  time-scale: 0.5
  max-model-len: 8192
  physics: attention
  physics-jitter: 0.2
  report-cached-tokens: false
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 {
		t.Fatalf("got %d configs", len(cfgs))
	}
	a, b := cfgs[0], cfgs[1]
	if a.Profile != "h100" || !slices.Equal(a.LoRAs, []string{"sql", "chat"}) || a.MaxLoras != 2 || a.Seed != 7 {
		t.Fatalf("entry 1: %+v", a)
	}
	if b.Engine != "sglang" || !slices.Equal(b.LoRAs, []string{"a", "b"}) || b.TimeScale != 0.5 ||
		b.MaxModelLen != 8192 || b.EffectiveMaxLoras() != 1 || b.Physics != "attention" || b.PhysicsJitter != 0.2 ||
		b.ReportCachedTokens {
		t.Fatalf("entry 2: %+v", b)
	}
	if d := server.DefaultConfig(); a.MaxModelLen != d.MaxModelLen || a.Engine != d.Engine || a.Physics != d.Physics ||
		a.PhysicsJitter != d.PhysicsJitter || !a.ReportCachedTokens {
		t.Fatalf("defaults not applied: %+v", a)
	}
}

func TestParseServersKeyAndUnderscores(t *testing.T) {
	cfgs, err := fleet.Parse(strings.NewReader("servers:\n  - listen: 127.0.0.1:8001\n    max_loras: 3\n    lora: a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 || cfgs[0].MaxLoras != 3 || cfgs[0].Listen != "127.0.0.1:8001" {
		t.Fatalf("configs %+v", cfgs)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "no servers"},
		{"empty list", "[]", "no servers"},
		{"not a list", "listen: 127.0.0.1:1\n", "parse"},
		{"unknown key", "- listen: 127.0.0.1:1\n  gpu: h100\n", "gpu"},
		{"bad profile", "- listen: 127.0.0.1:1\n  profile: tpu\n", "entry 1"},
		{"bad listen", "- listen: nowhere\n", "listen"},
		{"bad engine", "- listen: 127.0.0.1:1\n- listen: 127.0.0.1:2\n  engine: tgi\n", "entry 2"},
		{"negative time scale", "- listen: 127.0.0.1:1\n  time-scale: -1\n", "time-scale"},
		{"wrong type", "- listen: 127.0.0.1:1\n  max-loras: many\n", "parse"},
		{"duplicate listen", "- listen: 127.0.0.1:9\n- listen: 127.0.0.1:9\n", "both listen"},
		{"adapters without slots", "- listen: 127.0.0.1:1\n  lora: a\n  max-loras: 0\n", "max-loras"},
		{"malformed yaml", "- listen: [\n", "parse"},
		{"scalar", "hello\n", "list of servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fleet.Parse(strings.NewReader(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := fleet.Parse(strings.NewReader("")); !errors.Is(err, fleet.ErrEmpty) {
		t.Fatalf("empty file: %v, want ErrEmpty", err)
	}
}

func TestRunFleet(t *testing.T) {
	cfgs, err := fleet.Parse(strings.NewReader(`
- {listen: "127.0.0.1:0", profile: h100, model: llama, time-scale: 0.05}
- {listen: "127.0.0.1:0", profile: a10g, model: llama, time-scale: 0.05, engine: trtllm}
- {listen: "127.0.0.1:0", profile: l40s, model: mistral, time-scale: 0.05, lora: [x]}
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New(cfgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	if err := f.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	addrs := f.Addrs()
	wantMetric := []string{"vllm:num_requests_waiting", "trtllm_num_requests_waiting", "vllm:lora_requests_info"}
	for i, a := range addrs {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), wantMetric[i]) {
			t.Fatalf("pod %d (%s) metrics lack %s", i, a, wantMetric[i])
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("- listen: 127.0.0.1:8001\n  profile: h100\n  lora: [a, b]\n")
	f.Add("servers:\n  - {listen: '127.0.0.1:0', max_loras: 2}\n")
	f.Add("- listen: [\n")
	f.Fuzz(func(t *testing.T, doc string) {
		cfgs, err := fleet.Parse(strings.NewReader(doc))
		if err != nil {
			return
		}
		for i, c := range cfgs {
			if err := c.Validate(); err != nil {
				t.Fatalf("entry %d accepted but invalid: %v", i, err)
			}
		}
	})
}
