package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// screenshotEnv, set to 1, also writes the capacity map's screenshot to docs/img/.
const screenshotEnv = "SWITCHYARD_UPDATE_SCREENSHOTS"

const waitTimeout = 60 * time.Second

// mapState is what the page shows, read from its DOM.
type mapState struct {
	Status    string            `json:"status"`
	Cookie    string            `json:"cookie"`
	Clusters  map[string]tile   `json:"clusters"`
	Decisions []decisionRow     `json:"decisions"`
	Flows     map[string]string `json:"flows"`
}

type tile struct {
	State, FreeKV, Queue, ReadyPods, RTT string
}

type decisionRow struct {
	Cluster, Route string
}

// readState is the script that reads mapState from the page.
const readState = `(() => {
  const text = (root, f) => {
    const e = root.querySelector('[data-field="' + f + '"]');
    return e ? e.textContent : "";
  };
  const clusters = {};
  document.querySelectorAll("[data-cluster]").forEach(t => {
    clusters[t.getAttribute("data-cluster")] = {State: text(t, "state"), FreeKV: text(t, "free-kv"),
      Queue: text(t, "queue"), ReadyPods: text(t, "ready-pods"), RTT: text(t, "rtt")};
  });
  const decisions = [];
  document.querySelectorAll("#decisions tbody tr").forEach(r => {
    const c = r.querySelectorAll("td");
    if (c.length >= 5) decisions.push({Cluster: c[2].textContent, Route: c[4].textContent});
  });
  const flows = {};
  document.querySelectorAll("#flows tbody tr[data-flow]").forEach(r => {
    flows[r.getAttribute("data-flow")] = r.querySelectorAll("td")[3].textContent;
  });
  return {status: document.getElementById("status").textContent, cookie: document.cookie, clusters, decisions, flows};
})()`

// TestCapacityMapInBrowser starts a router over two regions' gateways and simulated pods, logs
// in to its capacity map in headless Chromium, waits for the grid to show every cluster with
// live figures, sends requests (local, then overflow with the local region drained) and sees
// the decisions and flows update; it saves a screenshot (and, with SWITCHYARD_UPDATE_SCREENSHOTS=1,
// docs/img/capacity-map.png). The page must run with no Content-Security-Policy violation and
// no script error, and its session cookie must be out of the script's reach (HttpOnly).
func TestCapacityMapInBrowser(t *testing.T) {
	bin := chromium(t)
	w := harness.NewWorld(t, binDir)
	w.Gateway("east-a", "us-east-1", []string{w.Pod("h100").Listen, w.Pod("h100").Listen})
	w.Gateway("east-b", "us-east-1", []string{w.Pod("a100").Listen})
	w.Gateway("eu-a", "eu-west-1", []string{w.Pod("h100").Listen})
	router := w.Router("us-east-1", "", "--simulated-rtt=eu-west-1=80ms")
	admin := "http://" + router.Admin
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := harness.WaitClusters(ctx, admin, w.Token(), 3, waitTimeout); err != nil {
		t.Fatal(err)
	}

	bctx, problems := browser(t, ctx, bin)
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1440, 960),
		chromedp.Navigate(admin+"/map/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.Token()),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`[data-cluster="eu-a"]`)),
	); err != nil {
		t.Fatalf("log in and wait for the grid: %v", err)
	}
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil || loc != admin+"/map/" ||
		strings.Contains(loc, w.Token()) {
		t.Fatalf("page after login at %q (%v), want %s/map/ with no token in it", loc, err, admin)
	}
	waitPage(t, bctx, "the grid shows every cluster with live figures", func(s mapState) error {
		for name, pods := range map[string]string{"east-a": "2", "east-b": "1", "eu-a": "1"} {
			c, ok := s.Clusters[name]
			if !ok || c.ReadyPods != pods || c.State != "ok" || !strings.Contains(c.FreeKV, "%") {
				return fmt.Errorf("cluster %s shows %+v, want %s ready pods, ok and its free KV", name, c, pods)
			}
		}
		if s.Status != "live" {
			return fmt.Errorf("status %q", s.Status)
		}
		return nil
	})

	for range 4 {
		complete(t, router.Listen)
	}
	waitPage(t, bctx, "four local decisions listed", func(s mapState) error {
		local := 0
		for _, d := range s.Decisions {
			if d.Route == "local" && strings.HasPrefix(d.Cluster, "east-") {
				local++
			}
		}
		if local < 4 || s.Flows["us-east-1"] == "" {
			return fmt.Errorf("decisions %+v, flows %v", s.Decisions, s.Flows)
		}
		return nil
	})

	drainRegion(t, admin, w.Token(), "us-east-1", true)
	poll.Until(t, waitTimeout, func() bool { return complete(t, router.Listen) == "eu-a" },
		"a request overflowing to eu-west-1 once us-east-1 is drained")
	for range 3 {
		complete(t, router.Listen)
	}
	waitPage(t, bctx, "overflow decisions, the eu-west-1 flow and the drained region shown", func(s mapState) error {
		if len(s.Decisions) == 0 || s.Decisions[0].Cluster != "eu-a" || s.Decisions[0].Route != "overflow" {
			return fmt.Errorf("decisions %+v", s.Decisions)
		}
		if s.Flows["eu-west-1"] == "" {
			return fmt.Errorf("flows %v", s.Flows)
		}
		if s.Clusters["east-a"].State != "region drained" {
			return fmt.Errorf("east-a shows %q", s.Clusters["east-a"].State)
		}
		return nil
	})
	drainRegion(t, admin, w.Token(), "us-east-1", false)
	waitPage(t, bctx, "the region back", func(s mapState) error {
		if s.Clusters["east-a"].State != "ok" {
			return fmt.Errorf("east-a shows %q", s.Clusters["east-a"].State)
		}
		return nil
	})
	complete(t, router.Listen) // a local decision on top again
	time.Sleep(1500 * time.Millisecond)

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("the screenshot is not a PNG")
	}
	writeScreenshot(t, png)
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(p, "\n"))
	}
}

// browser starts headless Chromium for the test and returns its context and a function that
// lists the Content-Security-Policy violations, console errors and script exceptions seen.
func browser(t *testing.T, ctx context.Context, bin string) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium (%s): %v", bin, err)
	}
	var mu sync.Mutex
	var seen []string
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException) &&
				!strings.Contains(m.Text, "favicon") {
				mu.Lock()
				seen = append(seen, string(m.Type)+": "+m.Text)
				mu.Unlock()
			}
		}
	}()
	return bctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		// A stream cut while the router restarts a connection is not a problem of the page.
		var out []string
		for _, s := range seen {
			if !strings.Contains(s, "net::ERR_") {
				out = append(out, s)
			}
		}
		return out
	}
}

// waitPage polls the page's state until check accepts it.
func waitPage(t *testing.T, ctx context.Context, what string, check func(mapState) error) {
	t.Helper()
	var last mapState
	err := poll.Wait(withTimeout(t, ctx, waitTimeout), func(context.Context) error {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[mapState](readState))
		if err != nil {
			return err
		}
		if s.Cookie != "" {
			return poll.Stop(fmt.Errorf("the page's script reads the cookies %q: the session cookie must be HttpOnly",
				s.Cookie))
		}
		last = s
		return check(s)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (page: %+v)", what, err, last)
	}
}

func withTimeout(t *testing.T, ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// complete sends a completion through the router and returns the cluster that served it.
func complete(t *testing.T, listen string) string {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"Show me the capacity map","max_tokens":8}`
	resp, err := http.Post("http://"+listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion through the router: %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Switchyard-Cluster")
}

// drainRegion drains or undrains a region through the router's admin API (Connect, JSON).
func drainRegion(t *testing.T, admin, token, region string, drain bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"region": region, "drain": drain})
	req, _ := http.NewRequest(http.MethodPost, admin+"/switchyard.admin.v1.AdminService/DrainRegion", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("DrainRegion(%s, %v): %d %s", region, drain, resp.StatusCode, msg)
	}
}

// writeScreenshot saves the screenshot in the test's directory and, when screenshotEnv asks
// for it, as docs/img/capacity-map.png.
func writeScreenshot(t *testing.T, png []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capacity-map.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	if os.Getenv(screenshotEnv) != "1" {
		return
	}
	root, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "docs", "img", "capacity-map.png")
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot written to %s", doc)
}
