package app

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// drainGate keeps a server's listener open while it drains at shutdown: every request arriving
// once the drain has begun is answered 503 with Retry-After and Connection: close, so a client
// retries elsewhere instead of meeting a refused or reset connection, while the requests admitted
// before (streams) are counted and finish. serve stops accepting once none is left.
type drainGate struct {
	draining atomic.Bool
	active   atomic.Int64
}

// draining is the answer to a request that arrives during the drain, in OpenAI's error shape.
var draining = openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServiceUnavailable,
	Code: contract.ReasonShuttingDown, Message: "the router is shutting down; retry", RetryAfterSeconds: 1}

// wrap counts the requests h serves and refuses new ones once the drain has begun.
func (g *drainGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.draining.Load() {
			w.Header().Set("Connection", "close")
			draining.Write(w)
			return
		}
		g.active.Add(1)
		defer g.active.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// drainPoll is how often drain looks at the count of running requests.
const drainPoll = 20 * time.Millisecond

// drain starts refusing new requests and returns once no admitted request is running, or when
// ctx ends. A request that raced the start of the drain is still waited for by
// http.Server.Shutdown.
func (g *drainGate) drain(ctx context.Context) {
	g.draining.Store(true)
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for g.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
