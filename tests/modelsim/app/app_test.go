package app

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*options) bool
		wantErr string
	}{
		{
			"flags",
			[]string{"--listen=127.0.0.1:9001", "--profile=a10g", "--model=m", "--lora=a,b", "--max-loras=2", "--seed=9"},
			nil,
			func(o *options) bool {
				return o.cfg.Listen == "127.0.0.1:9001" && o.cfg.Profile == "a10g" && o.cfg.Model == "m" &&
					slices.Equal(o.cfg.LoRAs, []string{"a", "b"}) && o.cfg.MaxLoras == 2 && o.cfg.Seed == 9
			},
			"",
		},
		{"env fills unset flags", []string{"--model=m"},
			map[string]string{"SWITCHYARD_TIME_SCALE": "0.1", "SWITCHYARD_MODEL": "ignored", "SWITCHYARD_MAX_MODEL_LEN": "4096"},
			func(o *options) bool {
				return o.cfg.TimeScale == 0.1 && o.cfg.Model == "m" && o.cfg.MaxModelLen == 4096
			}, ""},
		{"physics flags", []string{"--physics=blis", "--physics-jitter=0.1", "--report-cached-tokens=false"}, nil,
			func(o *options) bool {
				return o.cfg.Physics == "blis" && o.cfg.PhysicsJitter == 0.1 && !o.cfg.ReportCachedTokens
			}, ""},
		{
			"physics from env",
			nil,
			map[string]string{"SWITCHYARD_PHYSICS": "attention", "SWITCHYARD_REPORT_CACHED_TOKENS": "false"},
			func(o *options) bool { return o.cfg.Physics == "attention" && !o.cfg.ReportCachedTokens },
			"",
		},
		{"bad env value", nil, map[string]string{"SWITCHYARD_SEED": "x"}, nil, "SWITCHYARD_SEED"},
		{"bad flag value", []string{"--max-loras=many"}, nil, nil, "max-loras"},
		{"positional argument", []string{"serve"}, nil, nil, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(tt.args, env(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o) {
				t.Fatalf("options %+v", o.cfg)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte("- {listen: '127.0.0.1:0', profile: h100}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, 0},
		{"unknown flag", []string{"--gpu=h100"}, 2},
		{"bad profile", []string{"--profile=tpu"}, 1},
		{"bad engine", []string{"--engine=tgi"}, 1},
		{"bad log format", []string{"--log-format=xml"}, 1},
		{"fleet with model flag", []string{"--fleet=" + fleetFile, "--model=x"}, 1},
		{"missing fleet file", []string{"--fleet=" + fleetFile + ".missing"}, 1},
		{"bad physics", []string{"--physics=cubic"}, 1},
		{"bad physics jitter", []string{"--physics-jitter=5"}, 1},
		{"fleet with bad physics", []string{"--fleet=" + fleetFile, "--physics=cubic"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := Run(context.Background(), tt.args, env(nil), &out); got != tt.want {
				t.Fatalf("exit code %d, want %d; output:\n%s", got, tt.want, out.String())
			}
		})
	}
}

// TestFleetPhysicsOverride: --physics, --physics-jitter and --report-cached-tokens beside --fleet
// apply to every entry; entries keep their own settings otherwise.
func TestFleetPhysicsOverride(t *testing.T) {
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	yaml := "- {listen: '127.0.0.1:0', physics: blis}\n- {listen: '127.0.0.1:0', physics-jitter: 0.3}\n"
	if err := os.WriteFile(fleetFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        []string
		wantPhysics []string
		wantJitter  []float64
		wantReport  bool
	}{
		{"entries' own", []string{"--fleet=" + fleetFile}, []string{"blis", "linear"}, []float64{-1, 0.3}, true},
		{
			"overridden",
			[]string{"--fleet=" + fleetFile, "--physics=attention", "--physics-jitter=0", "--report-cached-tokens=false"},
			[]string{"attention", "attention"},
			[]float64{0, 0},
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parse(tt.args, env(nil), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			cfgs, err := o.configs()
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cfgs {
				if c.Physics != tt.wantPhysics[i] || c.PhysicsJitter != tt.wantJitter[i] || c.ReportCachedTokens != tt.wantReport {
					t.Errorf("entry %d: physics %q jitter %v report %v", i, c.Physics, c.PhysicsJitter, c.ReportCachedTokens)
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the server's logging goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--listen=127.0.0.1:0", "--log-format=json"},
			env(map[string]string{"SWITCHYARD_TIME_SCALE": "0.05"}), &out)
	}()
	re := regexp.MustCompile(`"addr":"(127\.0\.0\.1:\d+)"`)
	var addr string
	if !poll.Within(10*time.Second, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		cancel()
		t.Fatalf("server address never logged:\n%s", out.String())
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != 0 || resp.StatusCode != 200 {
		t.Fatalf("exit %d, healthz %d", code, resp.StatusCode)
	}
}
