package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/devstack"
)

// smallStack is a two-region stack small enough for CI, on ports of its own.
const smallStack = `
model: test-model
timeScale: 0.2
profile: default
regions:
  - name: us-east-1
    router: {listen: 127.0.0.1:%d, admin: 127.0.0.1:%d}
    clusters:
      - name: east-a
        pods: [{profile: h100, count: 1}, {profile: a10g, count: 1}]
  - name: eu-west-1
    router: {listen: 127.0.0.1:%d, admin: 127.0.0.1:%d}
    clusters:
      - name: eu-a
        pods: [{profile: a100, count: 1}]
latency:
  - {between: [us-east-1, eu-west-1], rtt: 40ms}
`

// startStack runs the local stack from src until the test ends and returns it once every
// component is ready.
func startStack(t *testing.T, src string) *devstack.Config {
	t.Helper()
	cfg, err := devstack.ParseConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, cfg, devstack.Options{
			DataDir: t.TempDir(), BinDir: binDir, ReadyTimeout: 90 * time.Second,
			StopGrace: 20 * time.Second, Out: io.Discard, Ready: ready,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stack shutdown: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("stack did not start: %v", err)
	}
	return cfg
}

func TestLocalStackServesThroughRouters(t *testing.T) {
	ports := freePorts(t, 4)
	cfg := startStack(t, sprintf(smallStack, ports...))
	for _, r := range cfg.Regions {
		t.Run(r.Name, func(t *testing.T) {
			body := `{"model":"test-model","prompt":"Say hello to the world","max_tokens":8,"stream":true}`
			resp, err := http.Post("http://"+r.Router.Listen+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := resp.Header.Get("X-Switchyard-Region"); got != r.Name {
				t.Errorf("served in region %q, want the local region %q", got, r.Name)
			}
			if got := resp.Header.Get("X-Switchyard-Route"); got != "local" {
				t.Errorf("route %q, want local", got)
			}
			if resp.Header.Get("X-Switchyard-Cluster") == "" {
				t.Errorf("no x-switchyard-cluster header")
			}
			events, done := 0, false
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if line == "data: [DONE]" {
					done = true
				} else if strings.HasPrefix(line, "data: ") {
					events++
				}
			}
			if events < 1 || !done {
				t.Fatalf("stream had %d events, done=%v", events, done)
			}
		})
	}
}
