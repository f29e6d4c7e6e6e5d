package extproc_test

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard-dev/switchyard/contract"
)

// TestResponsesExchange runs a streaming Responses API request through ext_proc, which reads
// every path Envoy sends it the same way: it is scheduled by its body's model, and its answer
// is metered from the first delta (not response.created) with the usage of response.completed.
func TestResponsesExchange(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(
		`{"model":"llama","stream":true,"instructions":"be brief","input":[{"role":"user","content":"hello"}],"max_output_tokens":16}`,
	)
	if err := s.Send(
		headersMsg(false, nil, ":method", "POST", ":path", "/v1/responses", "content-type", "application/json"),
	); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(bodyMsg(body, true)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	hm := r.GetRequestHeaders().GetResponse().GetHeaderMutation()
	if got := headerValue(
		hm,
		contract.HeaderDestination,
	); got != addrs[0] ||
		headerValue(hm, contract.HeaderModelName) != "llama" {
		t.Fatalf("request header mutation = %v", hm)
	}
	if r, err = s.Recv(); err != nil ||
		string(r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()) != string(body) {
		t.Fatalf("body back = %v, %v; want it unchanged", r, err)
	}
	respHeaders := &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{
				Headers: []*corev3.HeaderValue{
					{Key: ":status", RawValue: []byte("200")},
					{Key: "content-type", RawValue: []byte("text/event-stream")},
				},
			},
		}},
	}
	if err := s.Send(respHeaders); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	const lifecycle = 100 * time.Millisecond // between response.created and the first delta
	chunks := []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"b\"}\n\n",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":8},\"output_tokens\":2}}}\n\n",
	}
	for i, c := range chunks {
		if i == 1 {
			time.Sleep(lifecycle)
		}
		eos := i == len(chunks)-1
		if err := s.Send(
			&extprocv3.ProcessingRequest{
				Request: &extprocv3.ProcessingRequest_ResponseBody{
					ResponseBody: &extprocv3.HttpBody{Body: []byte(c), EndOfStream: eos},
				},
			},
		); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.CloseSend()
	waitPosts(t, e.hooks, 1)
	p := e.hooks.all()[0]
	if p.Status != 200 || p.OutputTokens != 2 || p.PromptTokens != 12 || p.CachedTokens != 8 || p.TTFT < lifecycle {
		t.Fatalf(
			"response info = %+v, want 2 output tokens, 12 prompt, 8 cached, TTFT from the first delta (at least %v)",
			p,
			lifecycle,
		)
	}
}
