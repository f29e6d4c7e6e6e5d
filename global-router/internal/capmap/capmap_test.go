package capmap_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
)

const token = "map-test-token"

// tokens is a rotatable token set.
type tokens struct {
	mu  sync.Mutex
	set map[string]bool
}

func (t *tokens) ValidToken(tok string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set[tok]
}

func (t *tokens) replace(toks ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set = map[string]bool{}
	for _, k := range toks {
		t.set[k] = true
	}
}

// fleet is a fake cluster table and region capacity.
type fleet struct{ clusters []*adminv1.Cluster }

func (f fleet) ClusterTable() []*adminv1.Cluster { return f.clusters }

func (f fleet) RegionCapacity() []clustertable.RegionCapacity {
	byRegion := map[string]*clustertable.RegionCapacity{}
	var out []clustertable.RegionCapacity
	var order []string
	for _, c := range f.clusters {
		r := byRegion[c.GetRegion()]
		if r == nil {
			r = &clustertable.RegionCapacity{Region: c.GetRegion()}
			byRegion[c.GetRegion()] = r
			order = append(order, c.GetRegion())
		}
		r.Available++
		r.FreeKVTokens += c.GetFreeKvTokens()
		r.TotalKVTokens += c.GetTotalKvTokens()
	}
	for _, name := range order {
		out = append(out, *byRegion[name])
	}
	return out
}

func cluster(name, region string, free uint64) *adminv1.Cluster {
	return &adminv1.Cluster{Name: name, Region: region, Healthy: true, FreeKvTokens: free, TotalKvTokens: 1_000_000,
		QueueDepth: 3, RttMs: 12.5, Models: []*adminv1.ClusterModel{{Name: "llama", ReadyPods: 2}}}
}

// env is a capacity map served over HTTP.
type env struct {
	srv    *httptest.Server
	reg    *prometheus.Registry
	tokens *tokens
	rec    *capmap.Recorder
	cancel context.CancelFunc
}

func newEnv(t *testing.T, tls bool, tune func(*capmap.Config), clusters ...*adminv1.Cluster) *env {
	t.Helper()
	if len(clusters) == 0 {
		clusters = []*adminv1.Cluster{cluster("c1", "us-east-1", 400_000), cluster("c2", "eu-west-1", 900_000)}
	}
	cfg := capmap.DefaultConfig()
	cfg.Region, cfg.Interval = "us-east-1", 50*time.Millisecond
	if tune != nil {
		tune(&cfg)
	}
	e := &env{reg: prometheus.NewPedanticRegistry(), tokens: &tokens{}, rec: capmap.NewRecorder(10)}
	e.tokens.replace(token)
	f := fleet{clusters: clusters}
	m, err := capmap.New(cfg, capmap.Deps{Clusters: f, Regions: f, Tokens: e.tokens, Outcomes: e.rec}, nil, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	mux := http.NewServeMux()
	mux.Handle(capmap.Prefix, m.Handler())
	mux.Handle("/map", m.Handler())
	if tls {
		e.srv = httptest.NewTLSServer(mux)
	} else {
		e.srv = httptest.NewServer(mux)
	}
	t.Cleanup(func() { cancel(); <-done; e.srv.Close() })
	return e
}

// client returns a client with a cookie jar that does not follow redirects.
func (e *env) client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// login posts tok to the login form and returns the answer (body read and closed).
func (e *env) login(t *testing.T, c *http.Client, tok string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(
		http.MethodPost,
		e.srv.URL+"/map/login",
		strings.NewReader(url.Values{"token": {tok}}.Encode()),
	)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	return do(t, c, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return do(t, c, req)
}

// loggedIn returns a client holding a session.
func (e *env) loggedIn(t *testing.T) *http.Client {
	t.Helper()
	c := e.client(t)
	if resp, body := e.login(t, c, token, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	return c
}

func counter(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// isOpenAIError reports whether body is an OpenAI-style error.
func isOpenAIError(body string) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	return json.Unmarshal([]byte(body), &e) == nil && e.Error.Message != "" && e.Error.Type != ""
}

// TestAuthRequired: without a session the page sends the browser to the login form and the
// data paths answer 401 in OpenAI's error shape, counted; the form and the assets need none.
func TestAuthRequired(t *testing.T) {
	e := newEnv(t, false, nil)
	c := e.client(t)
	resp, _ := get(t, c, e.srv.URL+"/map/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/map/login" {
		t.Errorf("page without a session: %d to %q, want 303 to /map/login", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/map/snapshot", "/map/events"} {
		resp, body := get(t, c, e.srv.URL+p)
		if resp.StatusCode != http.StatusUnauthorized || !isOpenAIError(body) {
			t.Errorf("%s without a session: %d %s, want 401 with an OpenAI error", p, resp.StatusCode, body)
		}
	}
	// A forged cookie is no session.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/map/snapshot", nil)
	req.AddCookie(&http.Cookie{Name: capmap.CookieName, Value: strings.Repeat("ab", 32)})
	if resp, _ := do(t, c, req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged cookie: %d, want 401", resp.StatusCode)
	}
	if got := counter(t, e.reg, "switchyard_router_capacity_map_refused_total", "reason", "unauthenticated"); got != 3 {
		t.Errorf("unauthenticated refusals counted %v, want 3", got)
	}
	for _, p := range []string{"/map/login", "/map/assets/app.js", "/map/assets/style.css"} {
		if resp, _ := get(t, c, e.srv.URL+p); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d, want 200 without a session", p, resp.StatusCode)
		}
	}
}

// TestLogin: a wrong token gets the form again with 401; the admin token opens a session whose
// cookie is HttpOnly, SameSite=Strict, for /map/ only, and Secure over TLS; the session then
// reads the data; a token in the URL logs nobody in; logout ends the session.
func TestLogin(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			e := newEnv(t, tls, nil)
			c := e.client(t)
			if resp, body := e.login(t, c, "wrong", nil); resp.StatusCode != http.StatusUnauthorized ||
				!strings.Contains(body, "not an accepted admin token") {
				t.Fatalf("wrong token: %d %s, want 401 and the form", resp.StatusCode, body)
			}
			// The token in the query string, none in the form: refused.
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/map/login?token="+token, strings.NewReader(""))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if resp, _ := do(t, c, req); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("token in the URL: %d, want 401", resp.StatusCode)
			}
			resp, body := e.login(t, c, token, nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/map/" {
				t.Fatalf("login: %d %s, want 303 to /map/", resp.StatusCode, body)
			}
			cookies := resp.Cookies()
			if len(cookies) != 1 {
				t.Fatalf("login set %d cookies, want 1", len(cookies))
			}
			ck := cookies[0]
			if ck.Name != capmap.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode ||
				ck.Path != "/map/" || ck.Secure != tls || ck.MaxAge <= 0 || len(ck.Value) < 64 {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/map/, Secure=%v, a max age, 32 random bytes",
					ck, tls)
			}
			if strings.Contains(ck.Value, token) || strings.Contains(resp.Header.Get("Location"), token) {
				t.Error("the token travels back to the browser")
			}
			if resp, body := get(t, c, e.srv.URL+"/map/"); resp.StatusCode != http.StatusOK ||
				!strings.Contains(body, "/map/assets/app.js") {
				t.Errorf("page with a session: %d", resp.StatusCode)
			}
			resp, body = get(t, c, e.srv.URL+"/map/snapshot")
			var snap capmap.Snapshot
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &snap) != nil || len(snap.Regions) != 2 {
				t.Fatalf("snapshot with a session: %d %s", resp.StatusCode, body)
			}
			if got := counter(t, e.reg, "switchyard_router_capacity_map_logins_total", "result", "refused"); got != 2 {
				t.Errorf("refused logins counted %v, want 2", got)
			}
			req, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/map/logout", nil)
			if resp, _ := do(t, c, req); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("logout: %d", resp.StatusCode)
			}
			// The jar dropped the cookie; the session is gone on the server too.
			req, _ = http.NewRequest(http.MethodGet, e.srv.URL+"/map/snapshot", nil)
			req.AddCookie(ck)
			if resp, _ := do(t, e.client(t), req); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("snapshot after logout with the old cookie: %d, want 401", resp.StatusCode)
			}
		})
	}
}

// TestLoginRefusals: a login from another origin, an unreadable form, and a flood of attempts
// are refused with a clear status, counted.
func TestLoginRefusals(t *testing.T) {
	e := newEnv(t, false, func(c *capmap.Config) { c.LoginRate, c.LoginBurst = 0.001, 2 })
	c := e.client(t)
	tests := []struct {
		name   string
		header http.Header
		ctype  string
		want   int
		reason string
	}{
		{"another origin", http.Header{"Origin": {"http://evil.example"}}, "", http.StatusForbidden, "cross_origin"},
		{"cross-site fetch", http.Header{"Sec-Fetch-Site": {"cross-site"}}, "", http.StatusForbidden, "cross_origin"},
		{"not a form", nil, "application/json", http.StatusBadRequest, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/map/login", strings.NewReader("token="+token))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, body := do(t, c, req)
			if resp.StatusCode != tt.want || !isOpenAIError(body) || len(resp.Cookies()) != 0 {
				t.Errorf("%d %s (cookies %v), want %d with an OpenAI error and no cookie", resp.StatusCode, body,
					resp.Cookies(), tt.want)
			}
			if got := counter(t, e.reg, "switchyard_router_capacity_map_refused_total", "reason", tt.reason); got < 1 {
				t.Errorf("not counted under %s", tt.reason)
			}
		})
	}
	// The same origin (as a browser sends it) is accepted.
	if resp, _ := e.login(t, c, token, http.Header{"Origin": {e.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}); resp.
		StatusCode != http.StatusSeeOther {
		t.Fatalf("same-origin login: %d, want 303", resp.StatusCode)
	}
	// The bucket (burst 2: the unreadable form and this login) is spent by now: the next attempt waits.
	resp, body := e.login(t, c, token, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !isOpenAIError(body) {
		t.Fatalf("login past the rate: %d %s, want 429 with Retry-After", resp.StatusCode, body)
	}
}

// TestSecurityHeaders: every answer, pages, assets, data and errors alike, carries the strict
// Content-Security-Policy (no inline script) and the other security headers; the pages load
// their script from a file.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, false, nil)
	c := e.loggedIn(t)
	for _, p := range []string{"/map/", "/map/login", "/map/assets/app.js", "/map/assets/style.css", "/map/snapshot",
		"/map/nope", "/map/assets/nope.js"} {
		resp, body := get(t, c, e.srv.URL+p)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		if csp != capmap.ContentSecurityPolicy || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: security headers %v", p, h)
		}
		if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "login") {
			if strings.Contains(body, "<script>") || strings.Contains(body, " on") && strings.Contains(body, "onclick") {
				t.Errorf("%s holds inline script", p)
			}
		}
	}
}

// TestUnknownPath: a path under /map/ the map does not serve is a 404 (405 for another
// method) in OpenAI's error shape, counted.
func TestUnknownPath(t *testing.T) {
	e := newEnv(t, false, nil)
	c := e.loggedIn(t)
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/map/nope", http.StatusNotFound},
		{http.MethodGet, "/map/assets/secrets.txt", http.StatusNotFound},
		{http.MethodGet, "/map/assets/index.html", http.StatusNotFound}, // embedded, not an asset
		{http.MethodDelete, "/map/events", http.StatusMethodNotAllowed},
		{http.MethodGet, "/map/logout", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
		resp, body := do(t, c, req)
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
		}
		if resp.StatusCode == tt.want && !isOpenAIError(body) {
			t.Errorf("%s %s: body %s is not an OpenAI error", tt.method, tt.path, body)
		}
	}
	if got := counter(t, e.reg, "switchyard_router_capacity_map_refused_total", "reason", "not_found"); got < 1 {
		t.Errorf("not_found refusals counted %v", got)
	}
	if got := counter(t, e.reg, "switchyard_router_capacity_map_refused_total", "reason", "method_not_allowed"); got != 2 {
		t.Errorf("method_not_allowed refusals counted %v, want 2", got)
	}
}

// TestSessionsBounded: logins past MaxSessions drop the session that expires first, counted.
func TestSessionsBounded(t *testing.T) {
	e := newEnv(t, false, func(c *capmap.Config) { c.MaxSessions, c.LoginBurst = 3, 100 })
	first := e.loggedIn(t)
	for range 5 {
		e.loggedIn(t)
	}
	if resp, _ := get(t, first, e.srv.URL+"/map/snapshot"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the oldest session still reads (%d) after 5 more logins with room for 3", resp.StatusCode)
	}
	if g := gauge(t, e, "switchyard_router_capacity_map_sessions"); g != 3 {
		t.Errorf("sessions gauge %v, want 3", g)
	}
	if n := gauge(t, e, "switchyard_router_capacity_map_sessions_evicted_total"); n != 3 {
		t.Errorf("evictions counted %v, want 3", n)
	}
}

// events opens an event stream with c and returns its reader.
func openEvents(t *testing.T, e *env, c *http.Client) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/map/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

// nextSnapshot reads the stream up to its next snapshot event.
func nextSnapshot(t *testing.T, r *bufio.Reader) (capmap.Snapshot, error) {
	t.Helper()
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return capmap.Snapshot{}, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "snapshot":
			var s capmap.Snapshot
			err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s)
			return s, err
		}
	}
}
