package clustertable

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// DigestSource provides the region digests a router's regional pool carries. *gossip.Node
// implements it; it must be safe for concurrent use.
type DigestSource interface {
	Digests() []gossip.Digest
}

// DigestFilter decides whether a cluster listed by a region digest may be routed to (a router
// checks its registration). *identity.Verifier implements it; it must be safe for concurrent use.
type DigestFilter interface {
	AcceptDigestCluster(region string, c *gossipv1.DigestCluster) error
}

// Regional is the Source of a router in a regional pool: the pool's own summaries (its region's
// clusters, as without regional pools) and, for every other region, the clusters its region
// digests list, as one summary per gateway URL, so that the table routes to them as to any
// remote cluster. Where two aggregators of a region list one cluster, the entry built from the
// newer gateway summary wins; a cluster the pool itself carries is never taken from a digest. A
// digest cluster's age is the digest's plus the summary's age at the aggregator; it is stale past
// TTL, so the clusters of a region whose aggregators all stopped age out. It is safe for
// concurrent use.
type Regional struct {
	pool    Source
	digests DigestSource
	filter  DigestFilter
	region  string
	ttl     time.Duration
	// revision reports the registrations' revision: a change re-filters every digest.
	revision func() int64

	mu    sync.Mutex
	cache map[string]*digestClusters // by origin
}

// digestClusters are the summaries built from one aggregator's digest state.
type digestClusters struct {
	seq, rev int64
	// entries are the accepted clusters with the summaries built for them (Age and Stale unset).
	entries []digestEntry
}

type digestEntry struct {
	cluster *gossipv1.DigestCluster
	reps    []gossip.Summary
}

// NewRegional returns the source of a router of region in a regional pool: pool's summaries and
// the accepted clusters of digests' other regions, stale after ttl. filter may be nil (every
// cluster accepted); revision, when set, tells when the filter's registrations changed.
func NewRegional(
	region string,
	pool Source,
	digests DigestSource,
	filter DigestFilter,
	ttl time.Duration,
	revision func() int64,
) *Regional {
	if revision == nil {
		revision = func() int64 { return 0 }
	}
	return &Regional{pool: pool, digests: digests, filter: filter, region: region, ttl: ttl, revision: revision,
		cache: map[string]*digestClusters{}}
}

var _ Source = (*Regional)(nil)

// Source returns r as the table's source: with the change signal of its pool when the pool has
// one (a *gossip.Node signals summary, member and digest changes alike), so the table's index is
// rebuilt on change rather than compared on every view; r itself otherwise.
func (r *Regional) Source() Source {
	if sub, ok := r.pool.(subscriber); ok {
		return subscribedRegional{Regional: r, sub: sub}
	}
	return r
}

// subscribedRegional is a Regional whose pool signals changes.
type subscribedRegional struct {
	*Regional
	sub subscriber
}

func (s subscribedRegional) Subscribe() (<-chan struct{}, func()) { return s.sub.Subscribe() }

// Snapshot returns the pool's summaries and the digest clusters, sorted by cluster then node.
func (r *Regional) Snapshot() []gossip.Summary {
	snap := r.pool.Snapshot()
	local := make(map[string]bool, len(snap))
	for _, s := range snap {
		local[s.Cluster] = true
	}
	best := map[string]digestPick{}
	for _, d := range r.digests.Digests() {
		if d.Region == r.region || d.Region == "" {
			continue
		}
		for _, e := range r.accepted(d) {
			name := e.cluster.GetCluster()
			if local[name] {
				continue
			}
			if cur, ok := best[name]; !ok || newerEntry(e, d, cur) {
				best[name] = digestPick{entry: e, digest: d}
			}
		}
	}
	if len(best) == 0 {
		return snap
	}
	out := slices.Grow(snap, len(best))
	for _, p := range best {
		age := p.digest.Age + time.Duration(p.entry.cluster.GetAgeMs())*time.Millisecond
		for _, rep := range p.entry.reps {
			rep.Age, rep.ReceivedAt = age, p.digest.ReceivedAt
			rep.Stale = p.digest.Stale || age > r.ttl
			out = append(out, rep)
		}
	}
	slices.SortStableFunc(out, func(a, b gossip.Summary) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.Node, b.Node)
	})
	return out
}

type digestPick struct {
	entry  digestEntry
	digest gossip.Digest
}

// newerEntry reports whether e of digest d is newer than cur: built from a newer gateway
// summary, or from the same one in a newer digest.
func newerEntry(e digestEntry, d gossip.Digest, cur digestPick) bool {
	a, b := e.cluster, cur.entry.cluster
	if a.GetNode() == b.GetNode() && a.GetSequence() != b.GetSequence() {
		return a.GetSequence() > b.GetSequence()
	}
	return d.Age+time.Duration(a.GetAgeMs())*time.Millisecond <
		cur.digest.Age+time.Duration(b.GetAgeMs())*time.Millisecond
}

// accepted returns the clusters of d the filter accepts, with their summaries, built once per
// digest state and registrations revision.
func (r *Regional) accepted(d gossip.Digest) []digestEntry {
	seq, rev := int64(d.Digest.GetSequence()), r.revision()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.cache[d.Origin]; c != nil && c.seq == seq && c.rev == rev {
		return c.entries
	}
	c := &digestClusters{seq: seq, rev: rev}
	for _, dc := range d.Digest.GetClusters() {
		if r.filter != nil && r.filter.AcceptDigestCluster(d.Region, dc) != nil {
			continue
		}
		c.entries = append(c.entries, digestEntry{cluster: dc, reps: digestReplicas(d, dc)})
	}
	if len(r.cache) > 4*gossipMaxOrigins {
		clear(r.cache)
	}
	r.cache[d.Origin] = c
	return c.entries
}

// gossipMaxOrigins bounds the aggregators cached (the gossip node keeps at most 1,024).
const gossipMaxOrigins = 1024

// digestReplicas builds one summary per gateway URL of a digest cluster: the first under the
// gateway replica's node name, the others under that name and their position.
func digestReplicas(d gossip.Digest, c *gossipv1.DigestCluster) []gossip.Summary {
	gen := d.Digest.GetGeneratedAtUnixNano() - int64(c.GetAgeMs())*int64(time.Millisecond)
	out := make([]gossip.Summary, 0, len(c.GetGatewayUrls()))
	for i, u := range c.GetGatewayUrls() {
		node := c.GetNode()
		if node == "" {
			node = d.Origin + "/" + c.GetCluster()
		}
		if i > 0 {
			node += "#" + strconv.Itoa(i)
		}
		s := &gossipv1.CapacitySummary{SchemaVersion: gossip.SchemaVersion, Cluster: c.GetCluster(), Region: d.Region,
			GatewayUrl: u, Node: node, Sequence: c.GetSequence(), GeneratedAtUnixNano: gen, Models: c.GetModels(),
			SigningKeyId: c.GetSummaryKeyId()}
		out = append(out, gossip.Summary{Summary: s, Node: node, Cluster: c.GetCluster(), Region: d.Region,
			State: gossip.StateAlive})
	}
	return out
}
