package pdhandler

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

var _ framework.PrefillWeigher = (*Handler)(nil)

// Cost is one way of prefilling a request, in seconds: the request's predicted time to first
// token and the stall it brings the running batch of the endpoint that prefills it.
type Cost struct {
	// TTFT is the predicted time to first token: the backlog ahead and the prompt's uncached
	// tokens at the endpoint's prefill speed, plus the KV transfer for a split.
	TTFT float64
	// Stall is the charge for the batch: every running sequence of the prefilling endpoint
	// waits for the prompt's prefill, so a prefill longer than the ITL budget costs that long
	// once per running sequence (0 within the budget or with no batch).
	Stall float64
}

// Total is the cost compared between the two ways.
func (c Cost) Total() float64 { return c.TTFT + c.Stall }

// SplitPays implements framework.PrefillWeigher. Without selective it always splits on the
// prefill profile's pick; with it, it finds the cheapest of the prefill profile's targets (its
// backlog, the transfer, and the stall its own batch takes when it is a both endpoint that
// decodes too), and the split pays when that cost is at most decode's cost of prefilling
// locally.
func (h *Handler) SplitPays(
	ctx context.Context,
	cs, pcs *framework.CycleState,
	req *framework.Request,
	decode framework.Endpoint,
	prefills []framework.Endpoint,
) (int, bool) {
	if h.load == nil || len(prefills) == 0 {
		return 0, len(prefills) > 0
	}
	local := h.cost(decode, uncached(req, cs, decode), 0)
	best, remote := 0, Cost{}
	for i, p := range prefills {
		tokens := uncached(req, pcs, p)
		c := h.cost(p, tokens, tokens*h.params.TransferPerToken.Seconds())
		if i == 0 || c.Total() < remote.Total() {
			best, remote = i, c
		}
	}
	pays := remote.Total() <= local.Total()
	if h.log.Enabled(ctx, slog.LevelDebug) {
		h.log.LogAttrs(ctx, slog.LevelDebug, "prefill/decode weighed", slog.String("request", req.ID),
			slog.String("decode", decode.Meta().Address), slog.String("prefill", prefills[best].Meta().Address),
			slog.Float64("local_ttft_s", local.TTFT), slog.Float64("local_stall_s", local.Stall),
			slog.Float64("split_ttft_s", remote.TTFT), slog.Float64("split_stall_s", remote.Stall),
			slog.Bool("split", pays))
	}
	return best, pays
}

// cost is the cost of e prefilling tokens uncached tokens, extra seconds (the KV transfer) added
// to the time to first token.
func (h *Handler) cost(e framework.Endpoint, tokens, extra float64) Cost {
	ahead, speed := h.load.backlog(e, tokens)
	prefill := tokens / speed
	c := Cost{TTFT: (ahead+tokens)/speed + extra}
	if framework.RoleOf(e.Meta()) == framework.RolePrefill {
		return c // no batch of its own to stall
	}
	if time.Duration(prefill*float64(time.Second)) > h.params.ITLBudget.Duration {
		c.Stall = float64(running(e)) * prefill
	}
	return c
}

// running is e's running batch: the latest scrape's, or this gateway's requests in flight there
// when that is larger (sent since the scrape) or there is no scrape yet.
func running(e framework.Endpoint) int {
	n := int(e.InFlight())
	if m := e.Metrics(); m != nil {
		n = max(m.Running, min(n, m.Running+int(e.InFlightSinceScrape())))
	}
	return max(0, n)
}
