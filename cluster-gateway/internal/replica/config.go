package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Sharer. Start from DefaultConfig and set the identity and addresses.
type Config struct {
	// Cluster is the cluster the replicas serve; messages from another cluster are dropped.
	// Required.
	Cluster string
	// NodeName names this replica in the pool; unique among the replicas. Required.
	NodeName string
	// BindAddr and BindPort are the pool's TCP and UDP address (port 0: any free port).
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort are what peers dial, when not the bound address.
	AdvertiseAddr string
	AdvertisePort int
	// Seeds are host:port addresses to join: the headless Service's DNS name resolves to every
	// replica. Joining is retried while this replica is alone in the pool.
	Seeds []string
	// Keys is the AES keyring (16, 24 or 32-byte keys; the first sends, all are accepted); nil
	// runs the pool unencrypted (local tests only).
	Keys [][]byte
	// Interval is how often the load report and the batched prefix routes are sent. Default 75ms.
	Interval time.Duration
	// MaxAge is the age past which a peer's load report counts for nothing: the staleness bound
	// of the shared load. Default 1s.
	MaxAge time.Duration
	// MaxBatchBytes bounds the prefix routes queued for one batch; routes past it are dropped
	// (counted). Default 64 KiB.
	MaxBatchBytes int
	// PacketBytes is the largest message sent; a batch is split into packets. Default 1200,
	// which fits memberlist's LAN UDP buffer with the encryption overhead.
	PacketBytes int
	// MaxPeers bounds the peers whose reports are kept. Default 32.
	MaxPeers int
	// RejoinInterval is how often the seeds are joined again while this replica has no peer
	// (replicas started together may each find only themselves behind the Service). Default 5s.
	RejoinInterval time.Duration
	// MaxStreamBytes cuts an incoming TCP stream (join, push/pull) larger than this before its
	// payload is buffered. Default 1 MiB.
	MaxStreamBytes int
	// InboxSize is the number of received messages waiting to be applied; past it messages are
	// dropped (counted). Default 4096.
	InboxSize int
	// Logger and Registerer are injected; nil means no logs and no metrics.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults; Cluster and NodeName must still be set.
func DefaultConfig() Config {
	return Config{
		BindAddr:       "0.0.0.0",
		BindPort:       7947,
		Interval:       75 * time.Millisecond, // batches every 50-100 ms
		MaxAge:         time.Second,           // a dozen missed reports
		MaxBatchBytes:  64 << 10,              // about 8,000 block hashes per batch
		PacketBytes:    1200,                  // under memberlist's 1400-byte LAN UDP buffer, sealed
		MaxPeers:       32,
		RejoinInterval: 5 * time.Second,
		MaxStreamBytes: 1 << 20, // push/pull of a small pool's member list
		InboxSize:      4096,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Cluster == "" {
		errs = append(errs, errors.New("replica: Cluster is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("replica: NodeName is required"))
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("replica: BindPort %d out of range", c.BindPort))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Interval", c.Interval}, {"MaxAge", c.MaxAge}, {"RejoinInterval", c.RejoinInterval}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("replica: %s must be positive, got %v", d.name, d.v))
		}
	}
	if c.MaxAge <= c.Interval {
		errs = append(errs, fmt.Errorf("replica: MaxAge %v must exceed Interval %v", c.MaxAge, c.Interval))
	}
	if c.PacketBytes < minPacketBytes || c.PacketBytes > maxPacketBytes {
		errs = append(errs, fmt.Errorf("replica: PacketBytes %d outside %d..%d", c.PacketBytes, minPacketBytes,
			maxPacketBytes))
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"MaxBatchBytes", c.MaxBatchBytes}, {"MaxPeers", c.MaxPeers}, {"MaxStreamBytes", c.MaxStreamBytes},
		{"InboxSize", c.InboxSize}} {
		if n.v <= 0 {
			errs = append(errs, fmt.Errorf("replica: %s must be positive, got %d", n.name, n.v))
		}
	}
	for i, k := range c.Keys {
		if l := len(k); l != 16 && l != 24 && l != 32 {
			errs = append(errs, fmt.Errorf("replica: key %d is %d bytes, want 16, 24 or 32", i+1, l))
		}
	}
	return errors.Join(errs...)
}
