package extproc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
)

// TestPrefillerHeader: with a prefill pod, ext_proc has Envoy send the decode pod
// x-prefiller-host-port (overwriting a client's value); without one, a client's value is removed,
// and so is, always, a client's value of any other header a sidecar sends the request to.
// The response carries the decision.
func TestPrefillerHeader(t *testing.T) {
	const hostile = "169.254.169.254:80"
	tests := []struct {
		name, prefill, wantPD string
	}{
		{"prefill pod chosen", addrs[2], framework.PDSplit},
		{"decode only", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.sched.prefill = tt.prefill
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := e.client.Process(ctx)
			if err != nil {
				t.Fatal(err)
			}
			peers := []string{"x-llm-d-prefiller-host-port", "x-prefiller-url", "x-data-parallel-host-port",
				"x-kv-cache-source-host-port", "x-llm-d-encoder-hosts-ports"}
			extra := []string{contract.HeaderPrefillerHostPort, hostile}
			for _, h := range peers {
				extra = append(extra, h, hostile)
			}
			sendRequest(t, s, bigBody(4096), nil, extra...)
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			m := r.GetRequestHeaders().GetResponse().GetHeaderMutation()
			got := headerValue(m, contract.HeaderPrefillerHostPort)
			removed := slices.Contains(m.GetRemoveHeaders(), contract.HeaderPrefillerHostPort)
			if got != tt.prefill || removed == (tt.prefill != "") {
				t.Fatalf("%s set to %q (removed %v), want %q", contract.HeaderPrefillerHostPort, got, removed, tt.prefill)
			}
			for _, h := range peers { // other headers a sidecar sends the request to: always removed
				if !slices.Contains(m.GetRemoveHeaders(), h) || headerValue(m, h) != "" {
					t.Errorf("the client's %s is not removed: %v", h, m.GetRemoveHeaders())
				}
			}
			for { // the body comes back
				r, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream() {
					break
				}
			}
			err = s.Send(&extprocv3.ProcessingRequest{
				Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
					Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", RawValue: []byte("200")}}},
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if r, err = s.Recv(); err != nil {
				t.Fatal(err)
			}
			if pd := headerValue(r.GetResponseHeaders().GetResponse().GetHeaderMutation(), contract.HeaderPD); pd != tt.wantPD {
				t.Fatalf("%s = %q, want %q", contract.HeaderPD, pd, tt.wantPD)
			}
		})
	}
}
