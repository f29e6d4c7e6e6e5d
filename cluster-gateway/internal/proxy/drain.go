package proxy

import (
	"context"
	"net/http"
	"time"
)

// countActive wraps h to count the requests admitted before the drain began, so that Serve keeps
// its listener open (answering 503 with Retry-After) exactly as long as streams still run. A
// request arriving during the drain is not counted, and its connection is closed after the
// answer, so the client reconnects to another replica.
func (s *Server) countActive(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
			h.ServeHTTP(w, r)
			return
		}
		s.active.Add(1)
		defer s.active.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// drainPoll is how often waitIdle looks at the count of running requests.
const drainPoll = 20 * time.Millisecond

// waitIdle returns once no request admitted before the drain is running, or when ctx ends. A
// request that raced the start of the drain is still waited for by http.Server.Shutdown.
func (s *Server) waitIdle(ctx context.Context) {
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
