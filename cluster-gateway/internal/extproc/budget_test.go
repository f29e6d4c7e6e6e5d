package extproc_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestBodyBudget checks that the chunks of bodies arriving over ext_proc streams are reserved
// from the body budget the HTTP proxy shares: a body still streaming holds what it received
// (never its declared length), a body that does not fit the rest is answered 503 with
// Retry-After at once, and the budget comes back when a stream ends, so the next body fits.
func TestBodyBudget(t *testing.T) {
	budget := body.NewBudget(100 << 10)
	e := newEnvBudget(t, budget)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A stalled upload: it declares 3 MB and sends one 64 KiB chunk.
	sctx, stop := context.WithCancel(ctx)
	stalled, err := e.client.Process(sctx)
	if err != nil {
		t.Fatal(err)
	}
	kv := []string{":method", "POST", ":path", "/v1/completions", "content-length", strconv.Itoa(3_000_000)}
	if err := stalled.Send(headersMsg(false, nil, kv...)); err != nil {
		t.Fatal(err)
	}
	if err := stalled.Send(bodyMsg(make([]byte, 64<<10), false)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 64<<10 }, "the stalled chunk reserved")

	// A whole 40 KiB body does not fit in the 36 KiB left.
	body40 := bigBody(40 << 10)
	if r := exchangeStatus(ctx, t, e, body40); r.GetImmediateResponse() == nil {
		t.Fatalf("a body beyond the budget was decided: %v", r)
	} else {
		wantBudgetRefusal(t, r.GetImmediateResponse())
	}
	if got := budget.InUse(); got != 64<<10 {
		t.Fatalf("after the refusal %d bytes are reserved, want the stalled stream's %d", got, 64<<10)
	}

	// The stalled stream ends: its reservation comes back and the same body is decided.
	stop()
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the stalled stream's budget released")
	if r := exchangeStatus(ctx, t, e, body40); r.GetRequestHeaders() == nil {
		t.Fatalf("with the budget free the body was refused: %v", r)
	}
}

// TestBodyBudgetGrowth checks that a body whose chunks outgrow the budget is refused by the
// chunk that does not fit, and gives back what it held.
func TestBodyBudgetGrowth(t *testing.T) {
	budget := body.NewBudget(200 << 10)
	e := newEnvBudget(t, budget)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(headersMsg(false, nil, ":method", "POST", ":path", "/v1/completions")); err != nil {
		t.Fatal(err)
	}
	// No content-length: 64 KiB, then 128 KiB to hold 128 KiB (both held while copying), then
	// 256 KiB, which the budget cannot cover.
	var r *extprocv3.ProcessingResponse
	for range 4 {
		if err := s.Send(bodyMsg(make([]byte, 64<<10), false)); err != nil {
			break // refused: the server ended the stream
		}
	}
	if r, err = s.Recv(); err != nil {
		t.Fatal(err)
	}
	wantBudgetRefusal(t, r.GetImmediateResponse())
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the refused body's budget released")
}

// exchangeStatus sends one request with body and returns the server's first answer.
func exchangeStatus(ctx context.Context, t *testing.T, e *env, b []byte) *extprocv3.ProcessingResponse {
	t.Helper()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.CloseSend() }()
	sendRequest(t, s, b, nil)
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantBudgetRefusal checks an immediate response is the body budget's 503.
func wantBudgetRefusal(t *testing.T, ir *extprocv3.ImmediateResponse) {
	t.Helper()
	if ir.GetStatus().GetCode() != 503 || headerValue(ir.GetHeaders(), "retry-after") != "1" ||
		!strings.Contains(string(ir.GetBody()), `"code":"body_budget_exhausted"`) {
		t.Fatalf("refusal %d, retry-after %q, body %s; want 503, 1 and body_budget_exhausted",
			ir.GetStatus().GetCode(), headerValue(ir.GetHeaders(), "retry-after"), ir.GetBody())
	}
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second
