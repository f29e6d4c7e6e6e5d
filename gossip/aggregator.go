package gossip

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// AggregatorConfig configures an Aggregator. Build it with DefaultAggregatorConfig.
type AggregatorConfig struct {
	// Region is the aggregator's region (required): its digest lists the fresh clusters of this
	// region in the regional pool, and digests of this region from the pool of aggregators are
	// not relayed into it.
	Region string
	// Regional is the node in the region's pool (required), Aggregators the node in the pool of
	// aggregators (required). Both must be running (their Run called) for the aggregator to work.
	Regional, Aggregators *Node
	// Interval is the heartbeat: the longest time between two digests. Default 1 s.
	Interval time.Duration
	// MinInterval is the least time between two digests; a significant change (see significant)
	// is published at once within it. Default 250 ms.
	MinInterval time.Duration
	// FullInterval is the longest the aggregator sends deltas against one full digest; it also
	// sends a full one when a delta would be more than half its size. Default 15 s.
	FullInterval time.Duration
	// MaxBytes bounds an encoded digest: clusters beyond it are left out (counted in
	// switchyard_gossip_aggregator_clusters_omitted_total), those without ready pods first.
	// At most the Aggregators node's MaxDigestBytes. Default 128 KiB.
	MaxBytes int
	// Logger receives the aggregator's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the aggregator's metrics. Default: none registered.
	Registerer prometheus.Registerer
}

// DefaultAggregatorConfig returns the defaults documented on AggregatorConfig.
func DefaultAggregatorConfig() AggregatorConfig {
	return AggregatorConfig{Interval: time.Second, MinInterval: 250 * time.Millisecond, FullInterval: 15 * time.Second,
		MaxBytes: 128 << 10}
}

// Validate reports the first field that is missing or out of range.
func (c *AggregatorConfig) Validate() error {
	var errs []error
	if c.Region == "" {
		errs = append(errs, errors.New("gossip: aggregator: Region is required"))
	}
	if c.Regional == nil || c.Aggregators == nil {
		errs = append(errs, errors.New("gossip: aggregator: Regional and Aggregators nodes are required"))
	} else if c.Regional == c.Aggregators {
		errs = append(errs, errors.New("gossip: aggregator: Regional and Aggregators must be two nodes"))
	}
	if c.MinInterval <= 0 || c.Interval < c.MinInterval || c.FullInterval < c.Interval {
		errs = append(errs, fmt.Errorf("gossip: aggregator: want 0 < MinInterval (%v) <= Interval (%v) <= FullInterval (%v)",
			c.MinInterval, c.Interval, c.FullInterval))
	}
	if c.MaxBytes < 1024 || (c.Aggregators != nil && c.MaxBytes > c.Aggregators.cfg.MaxDigestBytes) {
		errs = append(errs, fmt.Errorf("gossip: aggregator: MaxBytes %d, want 1024 up to the node's MaxDigestBytes",
			c.MaxBytes))
	}
	return errors.Join(errs...)
}

// Aggregator publishes its region's clusters as region digests in the pool of aggregators, and
// relays the digests of other regions from that pool into its region's pool, where every router
// reads them (Node.Digests). Digests are signed with the Aggregators node's signing key (the
// region's Ed25519 key: Config.SigningKey, SetSigningKey or a SigningKeyFileWatcher on that node,
// which publishes no summaries); without one they are unsigned, and routers accept them only
// while no cluster or region is registered. Create it with NewAggregator and start it with Run.
type Aggregator struct {
	cfg     AggregatorConfig
	log     *slog.Logger
	metrics aggregatorMetrics

	// Publishing state; only Run's goroutine touches it.
	full      *gossipv1.RegionDigest             // the last full digest published
	fullBytes int                                // its encoded size
	last      map[string]*gossipv1.DigestCluster // the state last published (full or delta)
	lastAt    time.Time
	// relayed is the newest message relayed per origin: full and delta sequences.
	relayed map[string][2]uint64
}

type aggregatorMetrics struct {
	clusters prometheus.Gauge
	omitted  prometheus.Counter
	errors   *prometheus.CounterVec
}

// NewAggregator validates cfg and returns an aggregator that has not started.
func NewAggregator(cfg AggregatorConfig) (*Aggregator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Aggregator{cfg: cfg, log: cfg.Logger, relayed: map[string][2]uint64{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	const ns, sub = "switchyard", "gossip"
	a.metrics = aggregatorMetrics{
		clusters: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "aggregator_clusters",
			Help: "Clusters in the region digest this aggregator last published."}),
		omitted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "aggregator_clusters_omitted_total",
			Help: "Clusters left out of a published region digest because it would exceed its size bound."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "aggregator_errors_total", Help: "Digests the aggregator failed to publish or relay, by operation."},
			[]string{"op"}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{a.metrics.clusters, a.metrics.omitted, a.metrics.errors} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("gossip: aggregator: register metrics: %w", err)
			}
		}
	}
	return a, nil
}

// Run publishes and relays digests until ctx ends; it returns nil then.
func (a *Aggregator) Run(ctx context.Context) error {
	changes, stop := a.cfg.Aggregators.Subscribe()
	defer stop()
	t := time.NewTicker(a.cfg.MinInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			a.relay()
		case <-t.C:
			a.publish(a.cfg.Regional.now())
			a.relay()
		}
	}
}

// relay moves the digests of other regions from the pool of aggregators into the region's pool.
func (a *Aggregator) relay() {
	for _, d := range a.cfg.Aggregators.Digests() {
		if d.Region == a.cfg.Region || d.Stale {
			continue
		}
		done := a.relayed[d.Origin]
		seqs := [2]uint64{d.Digest.GetSequence(), 0}
		if d.Delta != nil {
			seqs = [2]uint64{d.Digest.GetBaseSequence(), d.Digest.GetSequence()}
		}
		if seqs[0] > done[0] {
			a.relayOne(d.Origin, d.Full)
		}
		if seqs[1] > done[1] && d.Delta != nil {
			a.relayOne(d.Origin, d.Delta)
		}
		a.relayed[d.Origin] = seqs
	}
	if len(a.relayed) > maxDigestOrigins {
		clear(a.relayed) // at worst each state is relayed once more; the pool drops it as held
	}
}

func (a *Aggregator) relayOne(origin string, blob []byte) {
	if _, err := a.cfg.Regional.RelayDigest(blob); err != nil {
		a.metrics.errors.WithLabelValues("relay").Inc()
		a.log.Debug("region digest not relayed", "origin", origin, "err", err)
	}
}

// publish sends a digest when one is due: a full one when none was sent or the last is older
// than FullInterval, otherwise a delta on a significant change (at most every MinInterval, as
// the ticker runs) or when Interval has passed since the last digest.
func (a *Aggregator) publish(now time.Time) {
	cur := a.clusters()
	fullDue := a.full == nil || now.Sub(time.Unix(0, a.full.GetGeneratedAtUnixNano())) >= a.cfg.FullInterval
	if !fullDue && now.Sub(a.lastAt) < a.cfg.Interval && !changed(a.last, cur) {
		return
	}
	if !fullDue {
		delta := a.delta(cur)
		if size := proto.Size(delta); 2*size <= a.fullBytes {
			if _, err := a.cfg.Aggregators.PublishDigest(delta, a.signingKey()); err != nil {
				a.metrics.errors.WithLabelValues("publish").Inc()
				a.log.Warn("region digest delta not published", "err", err)
				return
			}
			a.published(cur, now)
			return
		}
	}
	full := a.bounded(cur)
	out, err := a.cfg.Aggregators.PublishDigest(full, a.signingKey())
	if err != nil {
		a.metrics.errors.WithLabelValues("publish").Inc()
		a.log.Warn("region digest not published", "err", err)
		return
	}
	a.full, a.fullBytes = out, proto.Size(out)
	a.published(byName(out.GetClusters()), now)
}

func (a *Aggregator) published(state map[string]*gossipv1.DigestCluster, now time.Time) {
	a.last, a.lastAt = state, now
	a.metrics.clusters.Set(float64(len(state)))
}

func (a *Aggregator) signingKey() ed25519.PrivateKey {
	if k := a.cfg.Aggregators.signingKey.Load(); k != nil {
		return *k
	}
	return nil
}

// delta is the digest of cur as differences from the last full digest.
func (a *Aggregator) delta(cur map[string]*gossipv1.DigestCluster) *gossipv1.RegionDigest {
	d := &gossipv1.RegionDigest{Region: a.cfg.Region, BaseSequence: a.full.GetSequence()}
	base := byName(a.full.GetClusters())
	for _, name := range slices.Sorted(maps.Keys(cur)) {
		if b, ok := base[name]; !ok || !sameCluster(b, cur[name]) {
			d.Clusters = append(d.Clusters, cur[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(base)) {
		if _, ok := cur[name]; !ok {
			d.Removed = append(d.Removed, name)
		}
	}
	return d
}

// bounded is the full digest of cur within MaxBytes: clusters with ready pods before those
// without, then by name; the ones that do not fit are left out and counted.
func (a *Aggregator) bounded(cur map[string]*gossipv1.DigestCluster) *gossipv1.RegionDigest {
	list := make([]*gossipv1.DigestCluster, 0, len(cur))
	for _, c := range cur {
		list = append(list, c)
	}
	slices.SortFunc(list, func(x, y *gossipv1.DigestCluster) int {
		if rx, ry := readyPods(x) > 0, readyPods(y) > 0; rx != ry {
			if rx {
				return -1
			}
			return 1
		}
		return strings.Compare(x.GetCluster(), y.GetCluster())
	})
	list = list[:min(len(list), MaxDigestClusters)]
	d := &gossipv1.RegionDigest{Region: a.cfg.Region, Clusters: list}
	for len(d.Clusters) > 0 {
		blob, err := EncodeDigest(d)
		if err == nil && len(blob)+256 <= a.cfg.MaxBytes { // room for the header and signature
			break
		}
		d.Clusters = d.Clusters[:len(d.Clusters)*7/8]
	}
	if omitted := len(cur) - len(d.Clusters); omitted > 0 {
		a.metrics.omitted.Add(float64(omitted))
		a.log.Warn("region digest over its size bound: clusters left out", "omitted", omitted,
			"listed", len(d.Clusters), "max_bytes", a.cfg.MaxBytes)
	}
	slices.SortFunc(d.Clusters, func(x, y *gossipv1.DigestCluster) int {
		return strings.Compare(x.GetCluster(), y.GetCluster())
	})
	return d
}

// clusters returns the region's fresh clusters in the regional pool as digest entries.
func (a *Aggregator) clusters() map[string]*gossipv1.DigestCluster {
	snap := a.cfg.Regional.Snapshot()
	out := map[string]*gossipv1.DigestCluster{}
	for name, best := range Clusters(snap) {
		if best.Stale || best.Region != a.cfg.Region || best.Summary.GetGatewayUrl() == "" {
			continue
		}
		s := best.Summary
		c := &gossipv1.DigestCluster{Cluster: name, Node: best.Node, Sequence: s.GetSequence(),
			AgeMs: uint32(min(best.Age.Milliseconds(), math.MaxUint32)), SummaryKeyId: s.GetSigningKeyId(),
			GatewayUrls: replicaURLs(snap, name)}
		c.GatewayUrls = c.GatewayUrls[:min(len(c.GatewayUrls), maxDigestURLs)]
		for _, m := range s.GetModels() {
			mc := proto.CloneOf(m)
			mc.PrefixSketch = nil
			c.Models = append(c.Models, mc)
		}
		out[name] = c
	}
	return out
}

// replicaURLs returns the gateway URLs of cluster's fresh replicas in snap, newest first.
func replicaURLs(snap []Summary, cluster string) []string {
	var reps []Summary
	for _, s := range snap {
		if s.Cluster == cluster && !s.Stale && s.Summary.GetGatewayUrl() != "" {
			reps = append(reps, s)
		}
	}
	slices.SortFunc(reps, func(x, y Summary) int {
		gx, gy := x.Summary.GetGeneratedAtUnixNano(), y.Summary.GetGeneratedAtUnixNano()
		switch {
		case gx > gy:
			return -1
		case gx < gy:
			return 1
		}
		return 0
	})
	var urls []string
	for _, s := range reps {
		if u := s.Summary.GetGatewayUrl(); !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// changed reports whether cur differs significantly from the state last published: a cluster
// came or went, or one of its figures moved past a threshold (significant).
func changed(last, cur map[string]*gossipv1.DigestCluster) bool {
	if len(last) != len(cur) {
		return true
	}
	for name, c := range cur {
		p, ok := last[name]
		if !ok || significant(p, c) {
			return true
		}
	}
	return false
}

// significant reports a change of a cluster that overflow routing should learn at once: its
// gateways or models changed, or a model's ready pods or saturated flag, its saturation by 0.1,
// its free KV by 5% of the total, its queue by 2 and 20%, or its predicted TTFT by 20%.
func significant(p, c *gossipv1.DigestCluster) bool {
	if !slices.Equal(p.GetGatewayUrls(), c.GetGatewayUrls()) || len(p.GetModels()) != len(c.GetModels()) {
		return true
	}
	for i, cm := range c.GetModels() {
		pm := p.GetModels()[i]
		total := float64(max(cm.GetTotalKvTokens(), 1))
		dq := math.Abs(float64(cm.GetQueueDepth()) - float64(pm.GetQueueDepth()))
		if pm.GetName() != cm.GetName() || pm.GetReadyPods() != cm.GetReadyPods() || pm.GetSaturated() != cm.GetSaturated() ||
			math.Abs(float64(cm.GetSaturation()-pm.GetSaturation())) >= 0.1 ||
			math.Abs(float64(cm.GetFreeKvTokens())-float64(pm.GetFreeKvTokens()))/total >= 0.05 ||
			(dq >= 2 && dq >= 0.2*float64(max(pm.GetQueueDepth(), 1))) ||
			relChange(pm.GetPredictedTtftMs(), cm.GetPredictedTtftMs()) >= 0.2 {
			return true
		}
	}
	return false
}

func relChange(a, b float32) float64 {
	if a == b {
		return 0
	}
	return math.Abs(float64(b-a)) / math.Max(math.Abs(float64(a)), 1)
}

// sameCluster reports whether two entries carry the same figures (their ages aside).
func sameCluster(a, b *gossipv1.DigestCluster) bool {
	x, y := proto.CloneOf(a), proto.CloneOf(b)
	x.AgeMs, y.AgeMs = 0, 0
	x.Sequence, y.Sequence = 0, 0
	return proto.Equal(x, y)
}

func readyPods(c *gossipv1.DigestCluster) uint32 {
	var n uint32
	for _, m := range c.GetModels() {
		n += m.GetReadyPods()
	}
	return n
}

func byName(cs []*gossipv1.DigestCluster) map[string]*gossipv1.DigestCluster {
	out := make(map[string]*gossipv1.DigestCluster, len(cs))
	for _, c := range cs {
		out[c.GetCluster()] = c
	}
	return out
}
