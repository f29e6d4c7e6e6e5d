package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/autoscale"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/prefixcache"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/replica"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Version is the gateway's version, carried in gossip metadata.
var Version = "dev"

// buildGossip joins the gossip pool and publishes the cluster's capacity summary, when
// --gossip-bind is set; a standalone gateway runs without it.
func (g *Gateway) buildGossip() error {
	if g.cfg.GossipBind == "" {
		return nil
	}
	keys, err := ReadGossipKeys(g.cfg.GossipKeyFile)
	if err != nil {
		return fmt.Errorf("--gossip-key-file: %w", err)
	}
	gc := gossip.DefaultWANConfig()
	host, _ := os.Hostname()
	gc.NodeName = fmt.Sprintf("gateway-%s-%s-%d", g.cfg.Cluster, host, os.Getpid())
	gc.Role, gc.Cluster, gc.Region, gc.Version = gossip.RoleGateway, g.cfg.Cluster, g.cfg.Region, Version
	gc.AdvertiseURL = g.advertiseURL()
	if gc.BindAddr, gc.BindPort, err = gossip.ParseAddr(g.cfg.GossipBind); err != nil {
		return fmt.Errorf("--gossip-bind: %w", err)
	}
	gc.Seeds, gc.Keys = splitList(g.cfg.GossipJoin), keys
	gc.Logger, gc.Registerer = g.log.With("component", "gossip"), g.reg
	if g.cfg.SummarySigningKeyFile != "" {
		if gc.SigningKey, err = gossip.LoadSigningKeyFile(g.cfg.SummarySigningKeyFile); err != nil {
			return fmt.Errorf("--summary-signing-key-file: %w", err)
		}
	}
	node, err := gossip.New(gc)
	if err != nil {
		return fmt.Errorf("gossip: %w", err)
	}
	pub, err := g.newPublisher(node, g.reg)
	if err != nil {
		return err
	}
	g.capacity = pub
	watch := gossip.KeyFileWatcher{Node: node, Path: g.cfg.GossipKeyFile} // rotation without restarts
	g.components = append(g.components, node, pub, watch)
	if g.cfg.SummarySigningKeyFile != "" {
		g.log.Info("capacity summaries signed", "key_id", node.SigningKeyID(), "file", g.cfg.SummarySigningKeyFile)
		g.components = append(g.components, gossip.SigningKeyFileWatcher{Node: node, Path: g.cfg.SummarySigningKeyFile})
	} else {
		g.log.Info(
			"capacity summaries unsigned: routers with registered clusters will ignore them (see --summary-signing-key-file)",
		)
	}
	return nil
}

// newPublisher returns the publisher of the cluster's capacity summary to sink, its metrics on reg
// (nil: none).
func (g *Gateway) newPublisher(sink publish.Sink, reg prometheus.Registerer) (*publish.Publisher, error) {
	pc := publish.DefaultConfig()
	pc.SketchSeed = prefix.Seed(g.cfg.Cluster)
	pc.Saturation.Staleness = g.cfg.Staleness
	opts := publish.Options{
		Queue:      g.flow,
		Logger:     g.log.With("component", "publish"),
		Registerer: reg,
	}
	switch {
	case g.resident != nil:
		opts.Prefixes, opts.PrefixSketchSource = g.resident, gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_KV_EVENTS
	case g.recent != nil:
		opts.Prefixes, opts.PrefixSketchSource = g.recent, gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_ROUTED
	}
	if m := g.sched.TTFTModel(); m != nil {
		opts.Predictor, opts.Speeds = m, m
	}
	pub, err := publish.New(pc, g.store.View(), sink, opts)
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	return pub, nil
}

// buildAutoscale derives the autoscaling signal from the same capacity figures the gateway
// gossips (a standalone gateway computes them without publishing them).
func (g *Gateway) buildAutoscale() error {
	if g.cfg.AutoscaleInterval == 0 {
		return nil
	}
	if g.capacity == nil {
		pub, err := g.newPublisher(noSink{}, nil) // never run: only its Capacity is read
		if err != nil {
			return err
		}
		g.capacity = pub
	}
	a, err := autoscale.New(g.cfg.autoscaleConfig(), g.capacity, autoscale.Options{
		Logger:     g.log.With("component", "autoscale"),
		Registerer: g.reg,
	})
	if err != nil {
		return fmt.Errorf("autoscale: %w", err)
	}
	g.components = append(g.components, a)
	return nil
}

// noSink is the Sink of a publisher that never publishes.
type noSink struct{}

func (noSink) Publish(*gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	return nil, errors.New("not published: no gossip")
}

// advertiseURL is the URL routers forward to: --advertise-url, or the HTTP proxy's address (with
// the host name when it listens on every interface), https:// when it serves TLS.
func (g *Gateway) advertiseURL() string {
	if g.cfg.AdvertiseURL != "" {
		return g.cfg.AdvertiseURL
	}
	host, port, _ := net.SplitHostPort(g.cfg.Listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host, _ = os.Hostname()
	}
	scheme := "http://"
	if g.cfg.TLSCertFile != "" {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port)
}

// hooks are the scheduler's request hooks plus recording of routed prompt prefixes for the
// capacity summary's prefix sketch and for the peer replicas.
type hooks struct {
	*scheduling.Scheduler
	recent   *publish.RecentPrefixes
	replicas *replica.Sharer
}

// PreRequest records the request's prefix blocks, then runs the scheduler's hooks.
func (h hooks) PreRequest(ctx context.Context, req *framework.Request, res *framework.Result) {
	if res != nil && len(req.PrefixHashes) > 0 {
		if h.recent != nil {
			h.recent.Record(req.BaseModel, req.PrefixHashes)
		}
		if h.replicas != nil && len(res.Targets) > 0 {
			hashes := req.PrefixHashes[:min(len(req.PrefixHashes), sharedPrefixBlocks)]
			h.replicas.Routed(req.BaseModel, res.Targets[0].Meta().Address, hashes)
		}
	}
	h.Scheduler.PreRequest(ctx, req, res)
}

// sharedPrefixBlocks is the most leading blocks of a prompt shared with the peer replicas: the
// prefix-cache scorer matches no more by default.
const sharedPrefixBlocks = prefixcache.DefaultMaxPrefixBlocksToMatch

// buildReplicas joins the cluster's active-active replica pool when --replica-bind is set.
func (g *Gateway) buildReplicas() error {
	if g.cfg.ReplicaBind == "" {
		return nil
	}
	rc := replica.DefaultConfig()
	rc.Cluster = g.cfg.Cluster
	host, _ := os.Hostname()
	// A random suffix keeps names unique even for replicas in one process (tests) or a restarted
	// pod that reuses its name before the pool forgot it.
	rc.NodeName = fmt.Sprintf("gateway-%s-%s-%d-%s", g.cfg.Cluster, host, os.Getpid(), rand.Text()[:8])
	rc.BindAddr, rc.BindPort, _ = gossip.ParseAddr(g.cfg.ReplicaBind) // validated
	if g.cfg.ReplicaAdvertise != "" {
		rc.AdvertiseAddr, rc.AdvertisePort, _ = gossip.ParseAddr(g.cfg.ReplicaAdvertise)
	}
	rc.Seeds, rc.Interval, rc.MaxAge = splitList(g.cfg.ReplicaJoin), g.cfg.ReplicaInterval, g.cfg.ReplicaMaxAge
	if g.cfg.ReplicaKeyFile != "" {
		keys, err := ReadGossipKeys(g.cfg.ReplicaKeyFile)
		if err != nil {
			return fmt.Errorf("--replica-key-file: %w", err)
		}
		rc.Keys = keys
	} else {
		g.log.Warn("replica pool unencrypted: set --replica-key-file outside local tests")
	}
	rc.Logger, rc.Registerer = g.log.With("component", "replica"), g.reg
	s, err := replica.New(rc, g.store)
	if err != nil {
		return fmt.Errorf("--replica-bind: %w", err)
	}
	if g.recent != nil {
		s.OnPeerModelPrefix(g.recent.Record) // the summary's sketch covers every replica's routes
	}
	g.replicas = s
	g.components = append(g.components, s)
	g.log.Info("replica pool", "addr", s.Addr(), "join", g.cfg.ReplicaJoin, "interval", rc.Interval)
	return nil
}

// ReplicaAddr is the replica pool's address ("" without --replica-bind).
func (g *Gateway) ReplicaAddr() string {
	if g.replicas == nil {
		return ""
	}
	return g.replicas.Addr()
}
