package proxy_test

import (
	"io"
	"net/http"
	"sync"
	"testing"

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
