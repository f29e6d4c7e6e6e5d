package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/sync/errgroup"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// Fleet is a set of simulated servers run together.
type Fleet struct {
	servers []*server.Server
}

// New builds one server per configuration, each with its own metrics registry and a logger
// tagged with its index.
func New(cfgs []server.Config, logger *slog.Logger) (*Fleet, error) {
	if len(cfgs) == 0 {
		return nil, ErrEmpty
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{}
	for i, c := range cfgs {
		s, err := server.New(c, logger.With("pod", i), nil)
		if err != nil {
			return nil, fmt.Errorf("fleet: server %d: %w", i+1, err)
		}
		f.servers = append(f.servers, s)
	}
	return f, nil
}

// Servers returns the fleet's servers, in configuration order.
func (f *Fleet) Servers() []*server.Server { return f.servers }

// Run serves every server until ctx is done (each drains its in-flight requests) or one fails,
// which stops the others. Listeners are opened first, so a busy port fails before anything serves.
func (f *Fleet) Run(ctx context.Context) error {
	lns := make([]net.Listener, 0, len(f.servers))
	for _, s := range f.servers {
		ln, err := net.Listen("tcp", s.Config().Listen)
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return fmt.Errorf("fleet: listen %s: %w", s.Config().Listen, err)
		}
		lns = append(lns, ln)
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range f.servers {
		g.Go(func() error { return s.Serve(gctx, lns[i]) })
	}
	return g.Wait()
}

// Ready waits until every server listens, or ctx is done.
func (f *Fleet) Ready(ctx context.Context) error {
	for _, s := range f.servers {
		select {
		case <-s.Ready():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Addrs returns each server's bound address (host:port) once Ready returned.
func (f *Fleet) Addrs() []string {
	out := make([]string, len(f.servers))
	for i, s := range f.servers {
		if a := s.Addr(); a != nil {
			out[i] = a.String()
		}
	}
	return out
}
