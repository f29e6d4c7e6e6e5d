package flowcontrol

import (
	"context"
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// Dispatch makes one pass over the queue: it answers expired requests with ErrOverflow, then
// retries the others, highest band first and round-robin across the tenants of a band, until
// every remaining head is still saturated. Run calls it; tests call it directly.
func (c *Controller) Dispatch(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Clock.Now()
	for _, it := range c.q.expired(now) {
		c.finish(
			it,
			outcome{err: fmt.Errorf("%w: queued longer than %v", ErrOverflow, c.cfg.TTL)},
			contract.ReasonFlowExpired,
			now,
		)
	}
	saturated := map[string]bool{}
	for i := 0; i < len(c.q.bands); {
		b := c.q.bands[i]
		c.dispatchBand(ctx, b, saturated, now)
		if i < len(c.q.bands) && c.q.bands[i] == b {
			i++ // band still has waiting requests; a removed band shifts the next one into i
		}
	}
}

// dispatchBand serves the tenants of b in round-robin order, one request per turn, until a full
// turn places nothing. saturated collects the models found saturated in this pass.
func (c *Controller) dispatchBand(ctx context.Context, b *band, saturated map[string]bool, now time.Time) {
	idle := 0
	for b.size > 0 && idle < len(b.tenants) {
		if b.next >= len(b.tenants) {
			b.next = 0
		}
		t := b.tenants[b.next]
		head := t.items[0]
		if saturated[head.req.Model] {
			b.next++
			idle++
			continue
		}
		res, err := c.sched.Schedule(ctx, head.req)
		if err != nil && c.opts.IsSaturated(err) {
			saturated[head.req.Model] = true
			b.next++
			idle++
			continue
		}
		label := contract.ReasonFlowDispatched
		if err != nil {
			label = contract.ReasonFlowError
		}
		lastOfTenant := len(t.items) == 1
		c.finish(head, outcome{res: res, err: err}, label, now)
		if !lastOfTenant {
			b.next++ // the tenant stays: move on to the next one; a dropped tenant already moved it
		}
		idle = 0
	}
}

// all returns every queued item.
func (q *queue) all() []*item {
	var out []*item
	for _, b := range q.bands {
		for _, t := range b.tenants {
			out = append(out, t.items...)
		}
	}
	return out
}
