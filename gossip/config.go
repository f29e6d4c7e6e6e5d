package gossip

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// Role is what a node does in the pool; it travels in the node's metadata.
type Role string

// Roles of a node.
const (
	// RoleGateway is a cluster gateway: it publishes its cluster's capacity summaries.
	RoleGateway Role = "gateway"
	// RoleRouter is a global router: it reads summaries and publishes none.
	RoleRouter Role = "router"
)

// Timings are the memberlist protocol periods. The LAN and WAN profiles set them; fields left zero
// by a caller are an error, not a default.
type Timings struct {
	// GossipInterval is how often a node sends queued broadcasts to GossipNodes random peers.
	GossipInterval time.Duration
	// GossipNodes is the fan-out of each gossip round.
	GossipNodes int
	// RetransmitMult: each broadcast is sent RetransmitMult·⌈log10(N+1)⌉ times by every node.
	RetransmitMult int
	// DeltaRetransmitMult is RetransmitMult for summary deltas. A delta is superseded by the
	// publisher's next one (every 250 ms under load), so it needs less redundancy than a full
	// summary, the base every later delta depends on.
	DeltaRetransmitMult int
	// ProbeInterval is the failure-detector period (one peer probed per period).
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack before indirect probes.
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a suspect node has to refute before it is declared dead.
	SuspicionMult int
	// PushPullInterval is the anti-entropy period: full state exchange with one random peer.
	PushPullInterval time.Duration
	// TCPTimeout bounds push/pull and join connections.
	TCPTimeout time.Duration
	// GossipToTheDeadTime is how long gossip still goes to a dead node (so it can refute).
	GossipToTheDeadTime time.Duration
	// UDPBufferSize is the largest packet sent; summaries larger than one packet are split.
	UDPBufferSize int
}

// LANTimings are tuned for one region: a change reaches 100 nodes within about a second.
func LANTimings() Timings {
	return Timings{
		GossipInterval:      100 * time.Millisecond, // 10 rounds a second: sub-second spread
		GossipNodes:         4,                      // fan-out 4: ~log4(N) rounds to reach all
		RetransmitMult:      3,                      // 3·⌈log10(N+1)⌉ sends per node per message
		DeltaRetransmitMult: 1,                      // ⌈log10(N+1)⌉ sends: the next delta repairs a miss
		ProbeInterval:       time.Second,            // one peer probed per second
		ProbeTimeout:        500 * time.Millisecond, // a LAN round trip is far below this
		SuspicionMult:       4,                      // suspect → dead after ~4·log(N) probe periods
		PushPullInterval:    15 * time.Second,       // anti-entropy; summaries normally travel as broadcasts
		TCPTimeout:          5 * time.Second,        // push/pull and join connections
		GossipToTheDeadTime: 30 * time.Second,       // keep telling a dead node, so it can refute
		UDPBufferSize:       1400,                   // below a 1500-byte MTU: no IP fragmentation
	}
}

// WANTimings are tuned for one pool spanning regions: slower failure detection, faster gossip
// than memberlist's WAN profile so that a change reaches 100 nodes within about 2.5 s.
func WANTimings() Timings {
	return Timings{
		GossipInterval:      200 * time.Millisecond, // inter-region RTTs are 50-250 ms
		GossipNodes:         4,                      // fan-out 4
		RetransmitMult:      3,                      // as LAN
		DeltaRetransmitMult: 1,                      // as LAN
		ProbeInterval:       5 * time.Second,        // probes cross oceans: probe less often
		ProbeTimeout:        3 * time.Second,        // tolerate high and variable RTT
		SuspicionMult:       6,                      // more patience before declaring death
		PushPullInterval:    30 * time.Second,       // anti-entropy
		TCPTimeout:          30 * time.Second,       // slow links
		GossipToTheDeadTime: 60 * time.Second,       // as memberlist's WAN profile
		UDPBufferSize:       1400,                   // below a 1500-byte MTU
	}
}

// Config configures a Node. Build it with DefaultLANConfig or DefaultWANConfig, set the identity
// fields, and call Validate (New does).
type Config struct {
	// NodeName is the node's unique name in the pool (required), e.g. "gw-us-east-1a-0".
	NodeName string
	// Role is RoleGateway or RoleRouter (required).
	Role Role
	// Cluster is the cluster a gateway serves (required for gateways).
	Cluster string
	// Region is the node's region (required).
	Region string
	// AdvertiseURL is the URL peers use to reach the node's HTTP front door (required for gateways).
	AdvertiseURL string
	// Version is the software version carried in metadata. Default "dev".
	Version string

	// BindAddr is the IP address gossip listens on (UDP and TCP). Default "0.0.0.0".
	BindAddr string
	// BindPort is the gossip port; 0 picks a free one. Default 7946.
	BindPort int
	// AdvertiseAddr is the IP peers use to reach this node; empty means the bind address (or the
	// first private address when binding to all interfaces).
	AdvertiseAddr string
	// AdvertisePort is the port peers use; 0 means the bound port.
	AdvertisePort int
	// Seeds are "host:port" addresses of nodes to join. Empty: this node starts a new pool.
	Seeds []string

	// Keys are the AES keys (16, 24 or 32 bytes; key files hold 32-byte keys) of the keyring:
	// Keys[0] encrypts, all decrypt. Required unless Insecure.
	Keys [][]byte
	// Insecure runs the pool unencrypted. Only for local experiments; default false.
	Insecure bool

	// SummaryTTL is the age after which a summary is marked stale. Default 3 s.
	SummaryTTL time.Duration
	// ForgetAfter is how long a dead or departed node and its last summary are still listed. Default 2 min.
	ForgetAfter time.Duration
	// JoinBackoffMin and JoinBackoffMax bound the delay between join attempts. Defaults 200 ms, 10 s.
	JoinBackoffMin time.Duration
	// JoinBackoffMax is the longest delay between join attempts.
	JoinBackoffMax time.Duration
	// LeaveTimeout bounds the graceful leave at shutdown. Default 2 s.
	LeaveTimeout time.Duration
	// SkipLeave stops without announcing the departure, so peers detect the node as dead, as after
	// a crash. For failure tests; default false.
	SkipLeave bool
	// MaxSummaryBytes bounds an encoded summary, decompressed. Default 1 MiB.
	MaxSummaryBytes int
	// FullSummaryInterval is the longest a publisher sends deltas against one full summary before
	// it sends a new full one. It also sends one when the delta would be more than half the size
	// of the full summary, when the models or the summary's header change, and soon after a peer
	// that lacks the base asks for it. Default 30 s.
	FullSummaryInterval time.Duration
	// BroadcastBudget is the summary bytes per second each node should send at most, for every
	// publisher's deltas and full summaries together (counted as their messages; packet framing,
	// push/pull and probes come on top). Every node relays every summary, so each gateway takes
	// an equal share of it (the budget divided by the alive gateways), less what its periodic
	// full summaries cost, and when its deltas would exceed that share it holds a delta back and
	// sends the newest one later, at most 500 ms after the previous delta: changes are delayed,
	// never lost. A small pool is never slowed. Default 18,000 (100 nodes stay under 20 KB/s
	// with 20 busy gateways); 0 turns pacing off.
	BroadcastBudget int
	// Precision is how finely published figures are rounded. Default DefaultPrecision().
	Precision Precision

	// SigningKey, when set, signs every summary this node publishes (a gateway holding its
	// cluster's Ed25519 key; SetSigningKey replaces it while running). Default none: unsigned.
	SigningKey ed25519.PrivateKey
	// Verifier, when set, must accept every summary received before it is stored (a router
	// checking cluster registrations). Default none: every well-formed summary is stored.
	Verifier SummaryVerifier
	// DigestVerifier, when set, must accept every region digest received before it is stored
	// and relayed (a router checking region keys). Default none: every well-formed digest is
	// stored.
	DigestVerifier DigestVerifier
	// MaxDigestBytes bounds an encoded region digest, decompressed. Default 1 MiB.
	MaxDigestBytes int
	// DigestTTL is the age after which a region digest's state is marked stale (Digest.Stale):
	// its aggregator has not been heard from, directly or relayed, for that long. A digest
	// crosses two pools and waits up to an aggregator's heartbeat interval, so this is longer
	// than SummaryTTL. Default 10 s.
	DigestTTL time.Duration
	// MaxClockSkew is how far ahead of this node's clock a received summary's sequence number
	// and generation time may be; chunks and summaries beyond it are dropped, so that a forged
	// sequence (sequences are the publisher's clock in nanoseconds) cannot make a node's real
	// summaries look stale. Default 30 s.
	MaxClockSkew time.Duration
	// MaxStreamBytes bounds what one incoming TCP stream (push/pull, join, reliable message) may
	// deliver; an encrypted stream whose header declares more is cut before its payload is read
	// (memberlist would buffer up to 20 MB before authenticating it). Default 8 MiB.
	MaxStreamBytes int
	// Timings are the memberlist protocol periods. Default LANTimings or WANTimings.
	Timings Timings
	// Transport, when set, makes the node's memberlist transport instead of UDP and TCP sockets
	// on BindAddr:BindPort: a simulated network that runs many nodes in one process without
	// sockets (the scale harness). The node still counts the bytes it moves and bounds the
	// streams it accepts; the transport's FinalAdvertiseAddr(AdvertiseAddr, AdvertisePort) is
	// the node's address. Default nil: sockets.
	Transport func() (memberlist.NodeAwareTransport, error)

	// MetricsSubsystem is the middle part of the node's metric names (switchyard_<it>_...), so
	// that two nodes of one process (a router's region pool and pool of aggregators) register
	// apart. Default "gossip".
	MetricsSubsystem string
	// Logger receives the node's and memberlist's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the node's metrics. Default: none registered.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
}

// DefaultLANConfig returns a configuration for a pool inside one region (or tests on loopback).
func DefaultLANConfig() Config {
	return Config{
		Version:         "dev",
		BindAddr:        "0.0.0.0",
		BindPort:        7946,
		SummaryTTL:      3 * time.Second,
		ForgetAfter:     2 * time.Minute,
		JoinBackoffMin:  200 * time.Millisecond,
		JoinBackoffMax:  10 * time.Second,
		LeaveTimeout:    2 * time.Second,
		MaxSummaryBytes: 1 << 20,
		Timings:         LANTimings(),

		FullSummaryInterval: 2 * time.Minute,
		BroadcastBudget:     18_000,
		Precision:           DefaultPrecision(),
		MaxClockSkew:        30 * time.Second,
		MaxStreamBytes:      8 << 20,
		MaxDigestBytes:      1 << 20,
		DigestTTL:           10 * time.Second,
	}
}

// DefaultWANConfig returns a configuration for one pool spanning regions (production).
func DefaultWANConfig() Config {
	c := DefaultLANConfig()
	c.Timings = WANTimings()
	return c
}

// Validate reports the first field that is missing or out of range.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.NodeName == "" {
		add("gossip: NodeName is required")
	}
	switch c.Role {
	case RoleGateway:
		if c.Cluster == "" {
			add("gossip: Cluster is required for role %q", c.Role)
		}
		if c.AdvertiseURL == "" {
			add("gossip: AdvertiseURL is required for role %q", c.Role)
		}
	case RoleRouter:
	default:
		add("gossip: Role %q, want %q or %q", c.Role, RoleGateway, RoleRouter)
	}
	if c.Region == "" {
		add("gossip: Region is required")
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || u.Scheme == "" || u.Host == "" {
			add("gossip: AdvertiseURL %q is not an absolute URL", c.AdvertiseURL)
		}
	}
	if _, err := encodeMetadata(c.metadata()); err != nil {
		add("gossip: metadata: %w", err)
	}
	errs = append(errs, c.validateNetwork()...)
	errs = append(errs, c.validateKeys()...)
	errs = append(errs, c.validateDurations()...)
	errs = append(errs, c.Timings.validate()...)
	if err := c.Precision.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Config) validateNetwork() []error {
	var errs []error
	if c.BindAddr == "" {
		errs = append(errs, errors.New("gossip: BindAddr is required"))
	}
	if c.BindPort < 0 || c.BindPort > 65535 || c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		errs = append(errs, fmt.Errorf("gossip: BindPort %d / AdvertisePort %d out of range", c.BindPort, c.AdvertisePort))
	}
	for _, s := range c.Seeds {
		if s == "" {
			errs = append(errs, errors.New("gossip: empty seed address"))
		}
	}
	return errs
}

func (c *Config) validateKeys() []error {
	if len(c.Keys) == 0 && !c.Insecure {
		return []error{errors.New("gossip: Keys are required (or set Insecure to run unencrypted)")}
	}
	var errs []error
	for i, k := range c.Keys {
		if err := memberlist.ValidateKey(k); err != nil {
			errs = append(errs, fmt.Errorf("gossip: Keys[%d]: %w", i, err))
		}
	}
	return errs
}

func (c *Config) validateDurations() []error {
	var errs []error
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("gossip: %s must be positive, got %v", name, d))
		}
	}
	pos("SummaryTTL", c.SummaryTTL)
	pos("ForgetAfter", c.ForgetAfter)
	pos("JoinBackoffMin", c.JoinBackoffMin)
	pos("JoinBackoffMax", c.JoinBackoffMax)
	pos("LeaveTimeout", c.LeaveTimeout)
	pos("FullSummaryInterval", c.FullSummaryInterval)
	pos("MaxClockSkew", c.MaxClockSkew)
	pos("DigestTTL", c.DigestTTL)
	if c.MaxStreamBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("gossip: MaxStreamBytes %d, want at least 65536", c.MaxStreamBytes))
	}
	if c.SigningKey != nil && len(c.SigningKey) != ed25519.PrivateKeySize {
		errs = append(
			errs,
			fmt.Errorf(
				"gossip: SigningKey is %d bytes, want an Ed25519 private key (%d)",
				len(c.SigningKey),
				ed25519.PrivateKeySize,
			),
		)
	}
	if c.JoinBackoffMax < c.JoinBackoffMin {
		errs = append(
			errs,
			fmt.Errorf("gossip: JoinBackoffMax %v below JoinBackoffMin %v", c.JoinBackoffMax, c.JoinBackoffMin),
		)
	}
	if c.BroadcastBudget < 0 {
		errs = append(errs, fmt.Errorf("gossip: BroadcastBudget %d bytes/s, want 0 (off) or more", c.BroadcastBudget))
	}
	if c.MaxDigestBytes < 1024 {
		errs = append(errs, fmt.Errorf("gossip: MaxDigestBytes %d, want at least 1024", c.MaxDigestBytes))
	}
	if c.MaxSummaryBytes < 1024 {
		errs = append(errs, fmt.Errorf("gossip: MaxSummaryBytes %d, want at least 1024", c.MaxSummaryBytes))
	}
	return errs
}

func (t Timings) validate() []error {
	var errs []error
	pos := func(name string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("gossip: Timings.%s must be positive, got %d", name, v))
		}
	}
	pos("GossipInterval", int64(t.GossipInterval))
	pos("GossipNodes", int64(t.GossipNodes))
	pos("RetransmitMult", int64(t.RetransmitMult))
	pos("DeltaRetransmitMult", int64(t.DeltaRetransmitMult))
	pos("ProbeInterval", int64(t.ProbeInterval))
	pos("ProbeTimeout", int64(t.ProbeTimeout))
	pos("SuspicionMult", int64(t.SuspicionMult))
	pos("PushPullInterval", int64(t.PushPullInterval))
	pos("TCPTimeout", int64(t.TCPTimeout))
	pos("GossipToTheDeadTime", int64(t.GossipToTheDeadTime))
	if t.UDPBufferSize < 512 || t.UDPBufferSize > 65000 {
		errs = append(errs, fmt.Errorf("gossip: Timings.UDPBufferSize %d, want 512..65000", t.UDPBufferSize))
	}
	return errs
}

// metadata returns the node metadata the configuration describes.
func (c *Config) metadata() Metadata {
	return Metadata{Role: c.Role, Cluster: c.Cluster, Region: c.Region, URL: c.AdvertiseURL, Version: c.Version}
}
