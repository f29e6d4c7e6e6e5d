package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
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
func startStack(t *testing.T, src string) (*devstack.Config, string) {
	t.Helper()
	cfg, err := devstack.ParseConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, cfg, devstack.Options{
			DataDir: dataDir, BinDir: binDir, ReadyTimeout: 90 * time.Second,
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
		done <- err // the cleanup waits for the stack's end: give it back, or it waits forever
		t.Fatalf("stack did not start: %v", err)
	}
	return cfg, dataDir
}

func TestLocalStackServesThroughRouters(t *testing.T) {
	ports := freePorts(t, 4)
	cfg, dataDir := startStack(t, sprintf(smallStack, ports...))
	for _, r := range cfg.Regions {
		t.Run(r.Name, func(t *testing.T) {
			resp := complete(t, r.Router.Listen)
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
	t.Run("operator drains a region", func(t *testing.T) { drainRegion(t, cfg, dataDir) })
}

// complete sends one short streamed completion to a router.
func complete(t *testing.T, addr string) *http.Response {
	t.Helper()
	body := `{"model":"test-model","prompt":"Say hello to the world","max_tokens":8,"stream":true}`
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// drainRegion drains us-east-1 with switchyardctl and checks that its router sends traffic to the
// other region (route overflow) within a generous bound, then undrains it and sees traffic return.
func drainRegion(t *testing.T, cfg *devstack.Config, dataDir string) {
	east, admin := cfg.Regions[0], cfg.Regions[0].Router.Admin
	ctl := func(args ...string) string {
		full := append([]string{"--addr=http://" + admin, "--token-file=" + filepath.Join(dataDir, "admin-token")}, args...)
		out, err := exec.Command(filepath.Join(binDir, "switchyardctl"), full...).CombinedOutput()
		if err != nil {
			t.Fatalf("switchyardctl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var list struct {
		Clusters []struct {
			Name    string `json:"name"`
			Region  string `json:"region"`
			Healthy bool   `json:"healthy"`
			Stale   bool   `json:"stale"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(ctl("clusters", "-o", "json")), &list); err != nil || len(list.Clusters) != 2 {
		t.Fatalf("clusters -o json: %v, %+v", err, list)
	}
	ctl("drain-region", east.Name)
	waitRoute(t, east.Router.Listen, "eu-west-1", "overflow")
	ctl("undrain-region", east.Name)
	waitRoute(t, east.Router.Listen, "us-east-1", "local")
}

// waitRoute sends requests until one is served in region with the given route, or fails after 10 s.
func waitRoute(t *testing.T, addr, region, route string) {
	t.Helper()
	poll.UntilState(t, 10*time.Second, func() (bool, string) {
		resp := complete(t, addr)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		gotRegion, gotRoute := resp.Header.Get("X-Switchyard-Region"), resp.Header.Get("X-Switchyard-Route")
		return resp.StatusCode == 200 && gotRegion == region && gotRoute == route,
			sprintf("served by %s/%s (status %d)", gotRegion, gotRoute, resp.StatusCode)
	}, "a request served by "+region+"/"+route)
}
