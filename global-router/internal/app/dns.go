package app

import (
	"context"
	"fmt"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnsserver"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync"
)

// dnsComponents builds the optional DNS responder and Route 53 sync.
func (r *Router) dnsComponents(ctx context.Context) ([]component, error) {
	var out []component
	if r.cfg.DNSListen != "" {
		dc, err := dnsserver.LoadConfig(r.cfg.DNSConfig)
		if err != nil {
			return nil, fmt.Errorf("--dns-config: %w", err)
		}
		dc.Listen = r.cfg.DNSListen
		drained := dnsserver.DrainFunc(func(region string) bool { return r.store.Snapshot().RegionDrained(region) })
		srv, err := dnsserver.New(dc, dnsserver.ReadinessFunc(r.regionReady), drained, r.log.With("component", "dns"), r.reg)
		if err != nil {
			return nil, fmt.Errorf("dns responder: %w", err)
		}
		out = append(out, srv)
	}
	if r.cfg.DNSSyncConfig != "" {
		cfg, cc, err := dnssync.LoadConfig(r.cfg.DNSSyncConfig)
		if err != nil {
			return nil, fmt.Errorf("--dns-sync-config: %w", err)
		}
		api, err := dnssync.NewClient(ctx, cc)
		if err != nil {
			return nil, fmt.Errorf("route53 client: %w", err)
		}
		el, err := configstore.NewElector(
			r.client,
			configstore.DefaultElectionConfig("dns-sync", r.nodeName()),
			r.log.With("component", "election"),
		)
		if err != nil {
			return nil, err
		}
		s, err := dnssync.New(cfg, api, r.store, el, r.log.With("component", "dnssync"), r.reg)
		if err != nil {
			return nil, fmt.Errorf("dns sync: %w", err)
		}
		out = append(out, el, s)
	}
	return out, nil
}

// regionReady reports whether region has a fresh, undrained cluster: where DNS may send clients.
// With regional pools, other regions' clusters come from their digests.
func (r *Router) regionReady(region string) bool {
	v := r.store.Snapshot()
	for _, s := range r.clusters.Snapshot() {
		if s.Region == region && !s.Stale && !v.Drained(s.Cluster, s.Region) {
			return true
		}
	}
	return false
}

// component is anything the router runs until ctx ends.
type component interface {
	Run(ctx context.Context) error
}
