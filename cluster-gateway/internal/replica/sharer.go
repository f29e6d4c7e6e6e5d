package replica

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Sharer shares this replica's load and prefix routes with its peers and applies theirs. Build
// it with New (which binds the pool's port), feed it with Routed, and Run it. It is safe for
// concurrent use.
type Sharer struct {
	cfg     Config
	log     *slog.Logger
	pods    Pods
	metrics *metrics
	ml      *memberlist.Memberlist
	tr      *guardedTransport
	inbox   chan []byte
	now     func() time.Time

	mu      sync.Mutex
	members map[string]bool // live peers of this cluster, by node name
	table   peerTable
	out     *outbox
	zeros   map[string]int

	subMu  sync.RWMutex
	onPeer []func(framework.Endpoint, []uint64)
	onSeen []func(model string, hashes []uint64)
}

var _ framework.PeerPrefixes = (*Sharer)(nil)

// New validates cfg, binds the pool's address and starts memberlist (alone until Run joins the
// seeds). Close it if Run is never called.
func New(cfg Config, pods Pods) (*Sharer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Sharer{
		cfg: cfg, log: logger, pods: pods, inbox: make(chan []byte, cfg.InboxSize), now: time.Now,
		members: map[string]bool{}, table: peerTable{peers: map[string]*peerState{}},
		out: newOutbox(cfg.MaxBatchBytes), zeros: map[string]int{},
	}
	s.metrics = newMetrics(s, cfg.Registerer)
	ml, err := s.start()
	if err != nil {
		return nil, err
	}
	s.ml = ml
	return s, nil
}

func (s *Sharer) start() (*memberlist.Memberlist, error) {
	c := memberlist.DefaultLANConfig()
	c.Name = s.cfg.NodeName
	c.BindAddr, c.BindPort = s.cfg.BindAddr, s.cfg.BindPort
	c.AdvertiseAddr, c.AdvertisePort = s.cfg.AdvertiseAddr, s.cfg.AdvertisePort
	c.Logger = log.New(io.Discard, "", 0)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		c.Logger = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	}
	if len(s.cfg.Keys) > 0 {
		kr, err := memberlist.NewKeyring(s.cfg.Keys, s.cfg.Keys[0])
		if err != nil {
			return nil, fmt.Errorf("replica: keyring: %w", err)
		}
		c.Keyring, c.GossipVerifyIncoming, c.GossipVerifyOutgoing = kr, true, true
	}
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{c.BindAddr}, BindPort: c.BindPort, Logger: c.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("replica: bind %s:%d: %w", c.BindAddr, c.BindPort, err)
	}
	s.tr = newGuardedTransport(nt, s.cfg.MaxStreamBytes, c.TCPTimeout, s.metrics.cut.Inc)
	c.Transport = s.tr
	if c.BindPort == 0 {
		c.BindPort = nt.GetAutoBindPort()
	}
	if c.AdvertisePort == 0 {
		c.AdvertisePort = c.BindPort
	}
	d := &delegate{s: s}
	c.Delegate, c.Events = d, d
	ml, err := memberlist.Create(c)
	if err != nil {
		_ = c.Transport.Shutdown()
		return nil, fmt.Errorf("replica: start memberlist: %w", err)
	}
	return ml, nil
}

// Addr is the address peers reach this replica at (a seed for others).
func (s *Sharer) Addr() string {
	n := s.ml.LocalNode()
	return n.Address()
}

// Close shuts the pool down without leaving (for a Sharer whose Run never ran).
func (s *Sharer) Close() error { return s.ml.Shutdown() }

// OnPeerPrefix registers f for every prefix route a peer made (framework.PeerPrefixes).
func (s *Sharer) OnPeerPrefix(f func(framework.Endpoint, []uint64)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.onPeer = append(s.onPeer, f)
}

// OnPeerModelPrefix registers f for every prefix route a peer made, with its base model (the
// capacity summary's recent prefixes). Same contract as OnPeerPrefix.
func (s *Sharer) OnPeerModelPrefix(f func(model string, hashes []uint64)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.onSeen = append(s.onSeen, f)
}

// Routed queues a prefix route this replica made (a request for base model with block hashes
// sent to the pod at addr) for the next batch. It copies hashes and never blocks on the network.
func (s *Sharer) Routed(model, addr string, hashes []uint64) {
	if len(hashes) == 0 || model == "" || len(model) > maxName || len(addr) > maxName {
		return
	}
	s.mu.Lock()
	ok := s.out.add(model, addr, hashes)
	s.mu.Unlock()
	if !ok {
		s.metrics.dropped.Inc()
	}
}

// Peers is the number of live peers.
func (s *Sharer) Peers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members)
}

// StateBytes estimates the memory held: the peers' load figures and the queued prefix batch.
func (s *Sharer) StateBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.bytes() + s.out.memBytes()
}

// PeerInFlight is the requests the peers report in flight, over every pod.
func (s *Sharer) PeerInFlight() int64 {
	var n int64
	for _, ep := range s.pods.Endpoints() {
		n += ep.PeerInFlight().Requests
	}
	return n
}

// OldestReport is the age of the stalest peer's newest load report.
func (s *Sharer) OldestReport() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.oldest(s.now())
}

// Run joins the seeds, then sends the load report and the prefix batch every Interval and
// applies the peers' messages until ctx ends; it then leaves the pool. It returns promptly on
// cancel even while a join waits on a silent seed: the join's stream is cut.
func (s *Sharer) Run(ctx context.Context) error {
	defer func() {
		if err := s.ml.Leave(time.Second); err != nil {
			s.log.Warn("replica pool leave", "err", err)
		}
		_ = s.ml.Shutdown()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.tr.abortDials() // before the wait: a join blocked on a seed returns now
	wg.Go(func() { s.applyLoop(ctx) })
	wg.Go(func() { s.joinLoop(ctx) })
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.flush()
			s.expire()
		}
	}
}

// joinLoop joins the seeds, and again every RejoinInterval while this replica has no peer, until
// ctx ends. It runs beside the batches: a join can take memberlist's TCP timeout per seed.
func (s *Sharer) joinLoop(ctx context.Context) {
	if len(s.cfg.Seeds) == 0 {
		return
	}
	s.join()
	rejoin := time.NewTicker(s.cfg.RejoinInterval)
	defer rejoin.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rejoin.C:
			if s.Peers() == 0 && ctx.Err() == nil {
				s.join()
			}
		}
	}
}

// join contacts the seeds (resolving DNS names to every address); failures are logged, and
// retried every RejoinInterval while this replica has no peer.
func (s *Sharer) join() {
	if len(s.cfg.Seeds) == 0 {
		return
	}
	n, err := s.ml.Join(s.cfg.Seeds)
	if n > 1 || (n > 0 && err == nil) {
		s.log.Info("replica pool joined", "node", s.cfg.NodeName, "contacted", n)
		return
	}
	s.log.Debug("replica pool join found no peer", "seeds", strings.Join(s.cfg.Seeds, ","), "err", err)
}

// flush sends the load report and the queued prefix routes to every live peer.
func (s *Sharer) flush() {
	s.mu.Lock()
	load := ownLoad(s.pods, s.zeros, nil)
	routes := splitRoutes(s.out.take(), s.cfg.PacketBytes)
	s.mu.Unlock()
	nodes := s.peerNodes()
	if len(nodes) == 0 {
		return
	}
	h := header{cluster: s.cfg.Cluster, sender: s.cfg.NodeName}
	h.kind = kindLoad
	s.send(nodes, h, packets(h, s.cfg.PacketBytes, len(load), func(b []byte, i int) []byte {
		return appendLoad(b, load[i])
	}))
	if len(routes) > 0 {
		h.kind = kindPrefix
		s.send(nodes, h, packets(h, s.cfg.PacketBytes, len(routes), func(b []byte, i int) []byte {
			return appendPrefix(b, routes[i])
		}))
	}
}

// packets encodes n entries (put appends entry i) into messages of at most limit bytes, each
// with its own header; with no entry it returns one message with none (a heartbeat). Every entry
// must fit in one message on its own (splitRoutes sees to it for prefix routes).
func packets(h header, limit, n int, put func([]byte, int) []byte) [][]byte {
	var out [][]byte
	cur := appendHeader(make([]byte, 0, limit), h)
	base := len(cur)
	for i := range n {
		mark := len(cur)
		cur = put(cur, i)
		if len(cur) > limit && mark > base {
			next := append(appendHeader(make([]byte, 0, limit), h), cur[mark:]...)
			out = append(out, cur[:mark])
			cur = next
		}
	}
	if len(cur) > base || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// splitRoutes cuts routes whose hashes do not fit in one message of limit bytes into several:
// the index keeps each block hash on its own, so a chain may arrive in pieces.
func splitRoutes(routes []prefixRoute, limit int) []prefixRoute {
	var out []prefixRoute
	for _, r := range routes {
		room := max(1, (limit-maxHeader-prefixSize(r.model, r.addr, 0))/8)
		for len(r.hashes) > room {
			out = append(out, prefixRoute{model: r.model, addr: r.addr, hashes: r.hashes[:room]})
			r.hashes = r.hashes[room:]
		}
		out = append(out, r)
	}
	return out
}

func (s *Sharer) send(nodes []*memberlist.Node, h header, msgs [][]byte) {
	kind := kindName(h.kind)
	for _, n := range nodes {
		for _, m := range msgs {
			if err := s.ml.SendBestEffort(n, m); err != nil {
				s.log.Debug("replica send failed", "peer", n.Name, "err", err)
				continue
			}
			s.metrics.sentMessages.WithLabelValues(kind).Inc()
			s.metrics.sentBytes.Add(float64(len(m)))
		}
	}
}

// peerNodes returns the live members of this cluster other than this replica. It reads
// memberlist's members before it takes s.mu: memberlist calls the event delegate (memberUp,
// memberDown, which take s.mu) with its node lock held, so calling memberlist with s.mu held
// would take the two locks in the opposite order and could deadlock the pool.
func (s *Sharer) peerNodes() []*memberlist.Node {
	all := s.ml.Members()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*memberlist.Node
	for _, n := range all {
		if s.members[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// expire ages out peer figures older than MaxAge and recomputes the affected pods.
func (s *Sharer) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for addr := range s.table.expire(s.pods, now, s.cfg.MaxAge) {
		s.table.sum(s.pods, addr, now, s.cfg.MaxAge)
	}
}
