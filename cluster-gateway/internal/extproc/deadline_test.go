package extproc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestBodyDeadline is the defence against a client that streams its body through Envoy slowly,
// or stalls it: past BodyTimeout from the request headers the request is answered 408 with an
// OpenAI-style error, its body budget is given back, the server ends the stream itself (a
// stream whose peer never closes it does not stay open), the refusal is counted and logged, and
// the server goes on deciding other requests. A body that arrives in time, in several chunks,
// is decided as before.
func TestBodyDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name string
		// send is what the client sends after the request headers, before it stalls.
		send []*extprocv3.ProcessingRequest
		held int64 // body bytes reserved while it stalls
	}{
		{"stalled after the headers", nil, 0},
		{"stalled after a chunk", []*extprocv3.ProcessingRequest{bodyMsg(make([]byte, 64<<10), false)}, 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := body.NewBudget(1 << 20)
			reg := prometheus.NewRegistry()
			logs := pipelinetest.NewLog()
			e := newEnvWith(t, envOptions{budget: budget, bodyTimeout: timeout, reg: reg, log: logs.Logger})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := e.client.Process(ctx)
			if err != nil {
				t.Fatal(err)
			}
			kv := []string{":method", "POST", ":path", "/v1/completions", "content-length", strconv.Itoa(1 << 19)}
			if err := s.Send(headersMsg(false, nil, kv...)); err != nil {
				t.Fatal(err)
			}
			for _, m := range tt.send {
				if err := s.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			poll.Until(t, waitTimeout, func() bool { return budget.InUse() == tt.held }, "the stalled body reserved")
			start := time.Now()
			r, err := s.Recv() // the client never sends the rest, and never closes the stream
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			wantTimeout(t, r.GetImmediateResponse())
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("answered after %s, with a %s body deadline", took, timeout)
			}
			if _, err := s.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the 408 the stream is still open (%v), want it ended by the server", err)
			}
			poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the stalled body's budget released")
			if n := pipelinetest.BodyRefused(t, reg, "ext_proc", "timeout"); n != 1 {
				t.Fatalf("slow bodies counted %v, want 1", n)
			}
			if got := logs.String(); strings.Count(got, "not received in time") != 1 ||
				!strings.Contains(got, `"door":"ext_proc"`) {
				t.Fatalf("want one log line with the reason, got: %s", got)
			}
			if r := exchangeStatus(ctx, t, e, bigBody(100<<10)); r.GetRequestHeaders() == nil {
				t.Fatalf("the next request was not decided: %v", r)
			}
		})
	}
}

// TestBodyInTimeIsDecided sends a body in chunks spread over most of the deadline: it is
// decided, and its stream then lives past the deadline (the response is not bounded).
func TestBodyInTimeIsDecided(t *testing.T) {
	const timeout = 2 * time.Second
	budget := body.NewBudget(1 << 20)
	e := newEnvWith(t, envOptions{budget: budget, bodyTimeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := bigBody(3000)
	third := len(b)/3 + 1
	if err := s.Send(headersMsg(false, nil, ":method", "POST", ":path", "/v1/completions")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		time.Sleep(100 * time.Millisecond)
		if err := s.Send(bodyMsg(b[i*third:min((i+1)*third, len(b))], i == 2)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if r.GetRequestHeaders() == nil {
		t.Fatalf("a body in time was refused: %v", r)
	}
	var echoed []byte
	for len(echoed) < len(b) {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		echoed = append(echoed, r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()...)
	}
	if !bytes.Equal(echoed, b) {
		t.Fatal("the body sent back differs from the body sent")
	}
	time.Sleep(timeout + 200*time.Millisecond) // the model server thinks past the body deadline
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || r.GetResponseHeaders() == nil {
		t.Fatalf("response headers after the body deadline: %v, %v", r, err)
	}
	_ = s.CloseSend()
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the body's budget released")
}

// wantTimeout checks an immediate response is the body deadline's 408.
func wantTimeout(t *testing.T, ir *extprocv3.ImmediateResponse) {
	t.Helper()
	var answer struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(ir.GetBody(), &answer); err != nil || ir.GetStatus().GetCode() != 408 ||
		answer.Error.Code != "request_timeout" || answer.Error.Type != "invalid_request_error" ||
		headerValue(ir.GetHeaders(), "content-type") != "application/json" {
		t.Fatalf(
			"refusal %d, body %s; want 408 with an OpenAI-style request_timeout error",
			ir.GetStatus().GetCode(),
			ir.GetBody(),
		)
	}
}
