package app_test

import (
	"testing"
)

// A static endpoint listed as name=host:port is named in x-switchyard-endpoint; one listed as a
// bare host:port gets a stable opaque name; --endpoint-header-address shows the address instead.
func TestEndpointHeaderNames(t *testing.T) {
	pod := newFakeVLLM(t)
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"named", []string{"--endpoints=vllm-0=" + pod.addr()}, "vllm-0"},
		{"address for debugging", []string{"--endpoints=vllm-0=" + pod.addr(), "--endpoint-header-address"}, pod.addr()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, 0, tt.flags...)
			resp, body := post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"x"}`)
			if got := resp.Header.Get("X-Switchyard-Endpoint"); resp.StatusCode != 200 || got != tt.want {
				t.Fatalf("status %d endpoint %q (body %s), want %q", resp.StatusCode, got, body, tt.want)
			}
		})
	}
}
