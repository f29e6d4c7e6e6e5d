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
// x-prefiller-host-port (overwriting a client's value); without one, a client's value is removed.
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
			sendRequest(t, s, bigBody(4096), nil, contract.HeaderPrefillerHostPort, hostile)
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
