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

// TestPrefillerHeader: the decode pod is told the prefill pod's host:port in
// x-prefiller-host-port, and only by the gateway: a client's value never reaches a pod.
func TestPrefillerHeader(t *testing.T) {
	const hostile = "169.254.169.254:80"
	var mu sync.Mutex
	var got []string // the header each decode request carried
	decode := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get(contract.HeaderPrefillerHostPort))
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
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"hi"}`,
				map[string]string{contract.HeaderPrefillerHostPort: hostile})
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
