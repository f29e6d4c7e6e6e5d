package extproc_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
)

// TestMessageLimit is the defence against one ext_proc message that makes gRPC assemble
// megabytes before the body budget sees them (grpc-go's default limit is 4 MiB, and a
// connection carries 1,024 streams): a message over extproc.MaxMessageBytes is refused before
// its payload is read, its stream ends with RESOURCE_EXHAUSTED naming the sizes, the refusal
// is counted and logged, and the other streams on the same connection (one mid-body, one started after) are
// decided as usual. A chunk of 1 MiB, the most Envoy holds of a body by default, still passes.
func TestMessageLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	logs := pipelinetest.NewLog()
	budget := body.NewBudget(64 << 20)
	e := newEnvWith(t, envOptions{budget: budget, reg: reg, log: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A request mid-body on the same connection.
	open, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	whole := bigBody(200 << 10)
	if err := open.Send(headersMsg(false, nil, ":method", "POST", ":path", "/v1/completions")); err != nil {
		t.Fatal(err)
	}
	if err := open.Send(bodyMsg(whole[:64<<10], false)); err != nil {
		t.Fatal(err)
	}

	// The oversized message: its request gets 413, and the stream ends.
	big, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Send(headersMsg(false, nil, ":method", "POST", ":path", "/v1/completions")); err != nil {
		t.Fatal(err)
	}
	if err := big.Send(bodyMsg(bigBody(extproc.MaxMessageBytes+1), true)); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	_, err = big.Recv()
	if st := status.Convert(
		err,
	); st.Code() != codes.ResourceExhausted ||
		!strings.Contains(st.Message(), "larger than max") {
		t.Fatalf("the oversized message's stream ended with %v; want RESOURCE_EXHAUSTED naming the sizes", err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { return strings.Contains(logs.String(), "ext_proc message refused") },
		"the refusal logged",
	)
	if got := pipelinetest.BodyRefused(t, reg, "ext_proc", "too_large"); got != 1 {
		t.Fatalf("too_large refusals = %v, want 1", got)
	}

	// The stream that was mid-body finishes and is decided.
	if err := open.Send(bodyMsg(whole[64<<10:], true)); err != nil {
		t.Fatal(err)
	}
	if r, err := open.Recv(); err != nil || r.GetRequestHeaders() == nil {
		t.Fatalf("the stream beside the refused one: %v, %v", r, err)
	}
	_ = open.CloseSend()

	// A new stream on the connection, with one 1 MiB chunk, is decided too.
	sctx, stop := context.WithCancel(ctx)
	if r := exchangeOneMessage(sctx, t, e, bigBody(1<<20)); r.GetRequestHeaders() == nil {
		t.Fatalf("a 1 MiB chunk was not decided: %v", r)
	}
	stop() // the body is being sent back: ending the stream gives its budget back
	cancel()
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "every body's budget released")
}

// exchangeOneMessage sends headers and body b in one message and returns the first answer.
func exchangeOneMessage(ctx context.Context, t *testing.T, e *env, b []byte) *extprocv3.ProcessingResponse {
	t.Helper()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.CloseSend() }()
	if err := s.Send(headersMsg(false, nil, ":method", "POST", ":path", "/v1/completions")); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(bodyMsg(b, true)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
