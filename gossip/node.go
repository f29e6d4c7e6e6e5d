package gossip

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/gossip/vivaldi"
)

// sweepInterval is how often the node re-evaluates staleness, forgets departed nodes and updates
// gauges.
const sweepInterval = 250 * time.Millisecond

// Node is one member of the gossip pool. Create it with New and start it with Run; every other
// method is safe for concurrent use, before, during and after Run.
type Node struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	meta    []byte
	keyring *memberlist.Keyring
	queue   *memberlist.TransmitLimitedQueue // full summaries, leaves
	// deltaQueue holds summary deltas, sent fewer times (Timings.DeltaRetransmitMult).
	deltaQueue *memberlist.TransmitLimitedQueue
	// beatQueue holds heartbeat deltas: deltas published after a gap of heartbeatGap or more,
	// which no later delta repairs soon, so they are sent as many times as full summaries
	// (Timings.RetransmitMult), and never fewer times than in a 100-node pool (see
	// peers.beatPoolSize). Deltas are a few dozen bytes when nothing changed.
	beatQueue *memberlist.TransmitLimitedQueue
	// digestQueue holds region digest chunks, after every summary message.
	digestQueue *memberlist.TransmitLimitedQueue
	digests     *digestStore
	pub         publisher
	wanted      fullRequests
	store       *store
	metrics     *metrics
	coords      *vivaldi.Client
	seq         sequencer
	subs        subscribers
	peers       peers

	// signingKey signs published summaries; nil: unsigned.
	signingKey atomic.Pointer[ed25519.PrivateKey]

	running atomic.Bool
	ready   chan struct{}
	mlMu    sync.RWMutex
	ml      *memberlist.Memberlist
}

// New validates cfg and returns a node that is not yet connected to anyone.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	meta, _ := encodeMetadata(cfg.metadata())
	n := &Node{
		cfg:    cfg,
		log:    cfg.Logger,
		now:    cfg.Now,
		meta:   meta,
		store:  newStore(cfg.MaxSummaryBytes),
		coords: vivaldi.NewClient(),
		ready:  make(chan struct{}),
		peers:  peers{members: map[string]*memberRecord{}, coords: map[string]vivaldi.Coordinate{}},
	}
	n.store.baseWait = baseWaitFor(cfg.Timings.GossipInterval)
	n.store.accept = n.accept
	n.digests = newDigestStore(cfg.MaxDigestBytes)
	n.digests.accept = n.acceptDigest
	if cfg.SigningKey != nil {
		key := cfg.SigningKey
		n.signingKey.Store(&key)
	}
	if n.log == nil {
		n.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if n.now == nil {
		n.now = time.Now
	}
	n.seq.last = uint64(n.now().UnixNano())
	n.queue = &memberlist.TransmitLimitedQueue{NumNodes: n.peers.aliveCount, RetransmitMult: cfg.Timings.RetransmitMult}
	n.deltaQueue = &memberlist.TransmitLimitedQueue{
		NumNodes:       n.peers.aliveCount,
		RetransmitMult: cfg.Timings.DeltaRetransmitMult,
	}
	n.digestQueue = &memberlist.TransmitLimitedQueue{NumNodes: n.peers.aliveCount,
		RetransmitMult: cfg.Timings.RetransmitMult}
	n.beatQueue = &memberlist.TransmitLimitedQueue{
		NumNodes:       n.peers.beatPoolSize,
		RetransmitMult: cfg.Timings.RetransmitMult,
	}
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	sub := cfg.MetricsSubsystem
	if sub == "" {
		sub = "gossip"
	}
	m, err := newMetrics(reg, sub, func() float64 {
		return float64(n.queue.NumQueued() + n.beatQueue.NumQueued() + n.deltaQueue.NumQueued() +
			n.digestQueue.NumQueued())
	})
	if err != nil {
		return nil, fmt.Errorf("gossip: register metrics: %w", err)
	}
	n.metrics = m
	if len(cfg.Keys) > 0 {
		if n.keyring, err = memberlist.NewKeyring(cfg.Keys, cfg.Keys[0]); err != nil {
			return nil, fmt.Errorf("gossip: keyring: %w", err)
		}
	}
	return n, nil
}

// Run creates the memberlist, joins the seeds (retrying with backoff until one join succeeds),
// and keeps the node in the pool until ctx is done; then it leaves gracefully and shuts down.
// It returns nil after a clean stop and an error when the node cannot start. Run may be called once.
func (n *Node) Run(ctx context.Context) error {
	if !n.running.CompareAndSwap(false, true) {
		return errors.New("gossip: Run called twice")
	}
	ml, err := n.create()
	if err != nil {
		return err
	}
	n.mlMu.Lock()
	n.ml = ml
	n.mlMu.Unlock()
	close(n.ready)
	n.log.Info("gossip started", "node", n.cfg.NodeName, "addr", n.Addr(), "encrypted", n.keyring != nil)
	defer n.stop(ml)
	if len(n.cfg.Seeds) > 0 && !n.join(ctx, ml) {
		return nil
	}
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n.sweep()
		}
	}
}

// create builds the transport and the memberlist.
func (n *Node) create() (*memberlist.Memberlist, error) {
	mlog := newMemberlistLogger(n.log)
	limits := streamLimits{maxBytes: n.cfg.MaxStreamBytes, timeout: n.cfg.Timings.TCPTimeout}
	var tr *countingTransport
	if n.cfg.Transport != nil {
		inner, err := n.cfg.Transport()
		if err != nil {
			return nil, fmt.Errorf("gossip: make transport: %w", err)
		}
		tr = wrapTransport(inner, n.metrics, limits)
	} else {
		var err error
		if tr, err = newCountingTransport(n.cfg.BindAddr, n.cfg.BindPort, mlog, n.metrics, limits); err != nil {
			return nil, err
		}
	}
	c := n.memberlistConfig(tr)
	c.Logger = mlog
	ml, err := memberlist.Create(c)
	if err != nil {
		_ = tr.Shutdown()
		return nil, fmt.Errorf("gossip: start memberlist: %w", err)
	}
	return ml, nil
}

func (n *Node) memberlistConfig(tr *countingTransport) *memberlist.Config {
	t := n.cfg.Timings
	c := memberlist.DefaultLANConfig()
	c.Name = n.cfg.NodeName
	c.Transport = tr
	port := tr.port(n.cfg.AdvertiseAddr, n.cfg.AdvertisePort)
	c.BindAddr, c.BindPort = n.cfg.BindAddr, port
	c.AdvertiseAddr, c.AdvertisePort = n.cfg.AdvertiseAddr, n.cfg.AdvertisePort
	if c.AdvertisePort == 0 {
		c.AdvertisePort = port
	}
	c.GossipInterval, c.GossipNodes, c.RetransmitMult = t.GossipInterval, t.GossipNodes, t.RetransmitMult
	c.ProbeInterval, c.ProbeTimeout, c.SuspicionMult = t.ProbeInterval, t.ProbeTimeout, t.SuspicionMult
	c.PushPullInterval, c.TCPTimeout = t.PushPullInterval, t.TCPTimeout
	c.GossipToTheDeadTime, c.UDPBufferSize = t.GossipToTheDeadTime, t.UDPBufferSize
	c.EnableCompression = false // summaries are compressed already
	c.Keyring = n.keyring
	c.GossipVerifyIncoming, c.GossipVerifyOutgoing = true, true
	c.DeadNodeReclaimTime = t.ProbeInterval // a restarted node may come back on a new address
	d := &delegate{n: n}
	c.Delegate, c.Events, c.Ping = d, d, d
	return c
}

// join retries Join with exponential backoff and jitter until a seed answers or ctx ends.
func (n *Node) join(ctx context.Context, ml *memberlist.Memberlist) bool {
	backoff := n.cfg.JoinBackoffMin
	for {
		joined, err := ml.Join(n.cfg.Seeds)
		if joined > 0 {
			n.metrics.joinAttempts.WithLabelValues("ok").Inc()
			n.log.Info("gossip joined", "node", n.cfg.NodeName, "contacted", joined)
			return true
		}
		n.metrics.joinAttempts.WithLabelValues("failed").Inc()
		n.log.Warn("gossip join failed", "node", n.cfg.NodeName, "seeds", n.cfg.Seeds, "retry_in", backoff, "err", err)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		backoff = min(2*backoff, n.cfg.JoinBackoffMax)
	}
}

// stop leaves the pool gracefully and shuts the memberlist down.
func (n *Node) stop(ml *memberlist.Memberlist) {
	if !n.cfg.SkipLeave {
		n.announceLeave()
		if err := ml.Leave(n.cfg.LeaveTimeout); err != nil {
			n.log.Warn("gossip leave", "node", n.cfg.NodeName, "err", err)
		}
	}
	if err := ml.Shutdown(); err != nil {
		n.log.Warn("gossip shutdown", "node", n.cfg.NodeName, "err", err)
	}
	n.log.Info("gossip stopped", "node", n.cfg.NodeName)
}

// Ready is closed once Run has bound its sockets; Addr is valid from then on.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Addr returns the "host:port" peers use to reach this node (a seed address for others), or ""
// before Run has started.
func (n *Node) Addr() string {
	n.mlMu.RLock()
	defer n.mlMu.RUnlock()
	if n.ml == nil {
		return ""
	}
	ln := n.ml.LocalNode()
	return net.JoinHostPort(ln.Addr.String(), strconv.Itoa(int(ln.Port)))
}

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// Stats returns the node's traffic counters.
func (n *Node) Stats() Stats { return n.metrics.stats() }

// memberlist returns the running memberlist or nil.
func (n *Node) memberlist() *memberlist.Memberlist {
	n.mlMu.RLock()
	defer n.mlMu.RUnlock()
	return n.ml
}
