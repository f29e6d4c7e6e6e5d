package proxy_test

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
	"github.com/switchyard-dev/switchyard/contract"
)

// peerHeaders are the headers llm-d's routing sidecar reads a peer's address from (besides
// x-prefiller-host-port): a client's value must never reach a pod.
var peerHeaders = []string{
	"x-llm-d-prefiller-host-port", "x-prefiller-url", "x-llm-d-encoder-hosts-ports", "x-encoder-hosts-ports",
	"x-llm-d-kv-cache-source-host-port", "x-kv-cache-source-host-port", "x-data-parallel-host-port",
}

// TestPrefillerHeader: the decode pod is told the prefill pod's host:port in
// x-prefiller-host-port, and only by the gateway: a client's value never reaches a pod, nor
// does its value of any other header a sidecar would send the request to.
func TestPrefillerHeader(t *testing.T) {
	const hostile = "169.254.169.254:80"
	var mu sync.Mutex
	var got []string // the header each decode request carried
	decode := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get(contract.HeaderPrefillerHostPort))
		for _, h := range peerHeaders {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("the decode pod received the client's %s: %q", h, v)
			}
		}
		mu.Unlock()
		w.Header().Set(contract.HeaderPD, "forged by the pod")
		_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
	})
	prefill := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the gateway itself sent a request to the prefill pod")
	})
	tests := []struct {
		name, prefill, wantHeader, wantPD string
		wantPrefillEndpoint               bool
	}{
		{"prefill pod chosen", prefill, prefill, framework.PDSplit, true},
		{"decode only", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *proxy.Config) { c.EndpointHeader = true }, decode, prefill)
			e.sched.order = []string{decode}
			e.sched.prefill = tt.prefill
			mu.Lock()
			got = nil
			mu.Unlock()
			hdr := map[string]string{contract.HeaderPrefillerHostPort: hostile}
			for _, h := range peerHeaders {
				hdr[h] = hostile
			}
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"hi"}`, hdr)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != tt.wantHeader {
				t.Fatalf("decode pod saw %s %q, want %q", contract.HeaderPrefillerHostPort, got, tt.wantHeader)
			}
			if pd := resp.Header.Get(contract.HeaderPD); pd != tt.wantPD {
				t.Errorf("%s = %q, want %q", contract.HeaderPD, pd, tt.wantPD)
			}
			name := resp.Header.Get(contract.HeaderPrefillEndpoint)
			if want := e.store.Get(prefill).Name; (name == want) != tt.wantPrefillEndpoint || name == prefill {
				t.Errorf("%s = %q (prefill pod named %q)", contract.HeaderPrefillEndpoint, name, want)
			}
		})
	}
}

// TestPrefillFallback: when the decode pod's sidecar answers 500, 502 or 504 for a split request
// (its remote prefill failed), the gateway retries the same decode pod without the prefill pod,
// so the client gets the decode pod's own answer; the failure counts against the prefill pod's
// passive health (which ejects it), never the decode pod's, and in the fallbacks metric. 503
// keeps its retry on another pod.
func TestPrefillFallback(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		fallsBack bool
	}{
		{"sidecar relays a prefill 500", http.StatusInternalServerError, true},
		{"prefill pod unreachable: 502", http.StatusBadGateway, true},
		{"prefill timed out: 504", http.StatusGatewayTimeout, true},
		{"decode pod saturated: 503", http.StatusServiceUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string // each decode attempt's prefiller header
			decode := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				p := r.Header.Get(contract.HeaderPrefillerHostPort)
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
				if p != "" {
					w.WriteHeader(tt.status)
					_, _ = io.WriteString(w, `{"error":{"type":"PrefillError","message":"remote prefill failed"}}`)
					return
				}
				_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
			})
			other := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
			})
			prefill := upstream(t, func(http.ResponseWriter, *http.Request) {})
			e := newEnv(t, func(c *proxy.Config) { c.EndpointHeader = true }, decode, other, prefill)
			e.sched.order = []string{decode, other}
			e.sched.prefill = prefill
			const n = 5 // passive health ejects after 5 failures in a row
			for range n {
				resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"hi"}`, nil)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want the retry's 200", resp.StatusCode)
				}
				pd, name := resp.Header.Get(contract.HeaderPD), resp.Header.Get(contract.HeaderEndpoint)
				if tt.fallsBack && (pd != proxy.PDPrefillFailed || name != e.store.Get(decode).Name ||
					resp.Header.Get(contract.HeaderPrefillEndpoint) != "") {
					t.Fatalf("pd %q on %q, want %q on the decode pod and no prefill endpoint", pd, name,
						proxy.PDPrefillFailed)
				}
			}
			mu.Lock()
			got := append([]string(nil), seen...)
			mu.Unlock()
			now := time.Now()
			fallbacks := sumCounter(t, e.reg, "switchyard_gateway_pd_fallbacks_total")
			if !tt.fallsBack {
				// The usual retry: another pod, still told of the prefill pod; nothing ejected.
				if len(got) != n || fallbacks != 0 || e.store.Get(prefill).Ejected(now) {
					t.Fatalf("decode attempts %q, fallbacks %v", got, fallbacks)
				}
				return
			}
			if len(got) != 2*n || got[0] != prefill || got[1] != "" {
				t.Fatalf("decode attempts %q, want each request once with the prefill pod, then without", got)
			}
			if fallbacks != n {
				t.Errorf("pd fallbacks = %v, want %d", fallbacks, n)
			}
			if !e.store.Get(prefill).Ejected(now) || e.store.Get(decode).Ejected(now) {
				t.Errorf("prefill pod ejected %v, decode pod ejected %v; want the prefill pod out",
					e.store.Get(prefill).Ejected(now), e.store.Get(decode).Ejected(now))
			}
		})
	}
}
