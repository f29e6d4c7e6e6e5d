package identity

import (
	"context"
	"log/slog"
)

// Revalidator re-checks the summaries it holds and forgets those now rejected. *gossip.Node
// implements it; it must be safe for concurrent use.
type Revalidator interface {
	Revalidate() []string
}

// DigestRevalidator is an optional interface of a Revalidator: it also re-checks the region
// digests it holds (*gossip.Node implements it). Concurrency contract as Revalidator's.
type DigestRevalidator interface {
	RevalidateDigests() []string
}

// Watch makes Node re-check its summaries (and region digests) whenever the cluster or region
// registrations in Config change, so that a
// revoked cluster, or an unverified summary accepted before the first registration, stops being
// routed to at once rather than when it would have gone stale.
type Watch struct {
	// Config is the watched configuration (the config store).
	Config ConfigSource
	// Verifier is the verifier Node uses; its mode is logged on every change.
	Verifier *Verifier
	// Node is the gossip node.
	Node Revalidator
	// Logger receives a line per change. Nil: discard.
	Logger *slog.Logger
}

// Run watches until ctx ends, then returns nil.
func (w Watch) Run(ctx context.Context) error {
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	view := w.Config.Snapshot()
	last := view.RegistrationsRevision()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-view.Replaced():
		}
		view = w.Config.Snapshot()
		if rev := view.RegistrationsRevision(); rev != last {
			last = rev
			dropped := w.Node.Revalidate()
			var digests []string
			if d, ok := w.Node.(DigestRevalidator); ok {
				digests = d.RevalidateDigests()
			}
			log.Info("cluster registrations changed", "registered", view.RegistrationCount(),
				"regions_registered", view.RegionRegistrationCount(), "identity_mode", w.Verifier.mode(view),
				"summaries_dropped", len(dropped), "nodes", dropped, "digests_dropped", digests)
		}
	}
}
