package kvevents

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Config configures the subscriber and its index.
type Config struct {
	// Endpoint is the ZeroMQ endpoint the SUB socket binds, tcp://HOST:PORT (llm-d's
	// tcp://*:5557 is accepted: * binds every address). Required.
	Endpoint string
	// TopicPrefix is the subscription: messages whose topic does not start with it are
	// dropped. Default "kv@" (llm-d's topic kv@<pod-ip>@<model>).
	TopicPrefix string
	// MaxMessageBytes bounds one message (all its frames together); a connection whose message
	// grows past it is closed before the frame is read. Default 1 MiB.
	MaxMessageBytes int
	// MaxFrames bounds the frames of one message (vLLM sends 3). Default 8.
	MaxFrames int
	// MaxConnections bounds the publishers connected at once; more are refused. Default 1024.
	MaxConnections int
	// HandshakeTimeout bounds the ZMTP greeting and handshake of a new connection, so a peer
	// that connects and says nothing cannot hold the accept loop. Default 5s.
	HandshakeTimeout time.Duration
	// MaxEventsPerBatch bounds the events of one batch. Default 16384.
	MaxEventsPerBatch int
	// MaxHashesPerEvent bounds the block hashes (and token ids, divided by the block size) of
	// one event. Default 65536.
	MaxHashesPerEvent int
	// MaxIndexBytes bounds the index's memory; past it the least recently stored entries are
	// evicted. Default 64 MiB (about 1.2 million (block, pod) entries).
	MaxIndexBytes int64
	// PodShareSlack and MinPodEntries bound each pod's share of the index (IndexConfig).
	// Defaults 2 and 4096.
	PodShareSlack float64
	MinPodEntries int
	// MaxPending bounds the pending (block, pod) entries (IndexConfig). Default 65536.
	MaxPending int
	// ResolveEvery is how often, at most, the endpoint set is re-read to resolve a topic that
	// names no known pod. Default 250ms.
	ResolveEvery time.Duration
	// TrustTopicPod accepts a message naming any pod in its topic. Default false: the pod a
	// topic names must be the IP its connection comes from (else the connection is closed),
	// so that no process on the pod network can publish in another pod's name. Set it only
	// where a proxy between the pods and the gateway hides the pods' addresses.
	TrustTopicPod bool
}

// DefaultConfig returns the defaults, with no Endpoint.
func DefaultConfig() Config {
	return Config{
		TopicPrefix:       "kv@",
		MaxMessageBytes:   1 << 20,
		MaxFrames:         8,
		MaxConnections:    1024,
		HandshakeTimeout:  5 * time.Second,
		MaxEventsPerBatch: 16384,
		MaxHashesPerEvent: 65536,
		MaxIndexBytes:     64 << 20,
		PodShareSlack:     2,
		MinPodEntries:     4096,
		MaxPending:        65536,
		ResolveEvery:      250 * time.Millisecond,
	}
}

// IndexConfig returns the index settings of c.
func (c Config) IndexConfig() IndexConfig {
	return IndexConfig{MaxBytes: c.MaxIndexBytes, PodShareSlack: c.PodShareSlack, MinPodEntries: c.MinPodEntries,
		MaxPending: c.MaxPending}
}

// IndexConfig configures an Index.
type IndexConfig struct {
	// MaxBytes bounds the entries' memory (EntryBytes each). Default 64 MiB.
	MaxBytes int64
	// PodShareSlack and MinPodEntries bound one pod's share: a pod holds at most
	// max(entries/pods × PodShareSlack, MinPodEntries) entries, pods being those the index
	// names (endpoints that published events), and a pod storing past it evicts its own oldest
	// entries; once the index is full, a pod holding at least entries/pods evicts its own
	// oldest too, and only a pod below that share evicts the index's oldest. So one pod
	// flooding the index with blocks cannot evict the entries of pods within their share.
	// Defaults 2 and 4096.
	PodShareSlack float64
	MinPodEntries int
	// MaxPending bounds the pending (block, pod) entries (AddPending), about 60 bytes each
	// beside MaxBytes; past it the oldest are dropped. Default 65536 (about 4 MiB).
	MaxPending int
}

// DefaultIndexConfig returns the defaults documented on each field.
func DefaultIndexConfig() IndexConfig { return DefaultConfig().IndexConfig() }

// Validate returns an error naming the invalid field.
func (c IndexConfig) Validate() error {
	switch {
	case c.MaxBytes < EntryBytes:
		return fmt.Errorf("kvevents: MaxIndexBytes must be at least %d, got %d", EntryBytes, c.MaxBytes)
	case !(c.PodShareSlack >= 1):
		return fmt.Errorf("kvevents: PodShareSlack must be at least 1, got %g", c.PodShareSlack)
	case c.MinPodEntries < 1:
		return fmt.Errorf("kvevents: MinPodEntries must be positive, got %d", c.MinPodEntries)
	case c.MaxPending < 1:
		return fmt.Errorf("kvevents: MaxPending must be positive, got %d", c.MaxPending)
	}
	return nil
}

// Validate returns an error naming the invalid field.
func (c Config) Validate() error {
	if _, err := ListenAddr(c.Endpoint); err != nil {
		return err
	}
	switch {
	case c.MaxMessageBytes < 64:
		return fmt.Errorf("kvevents: MaxMessageBytes must be at least 64, got %d", c.MaxMessageBytes)
	case c.MaxFrames < 3:
		return fmt.Errorf("kvevents: MaxFrames must be at least 3, got %d", c.MaxFrames)
	case c.MaxConnections < 1:
		return fmt.Errorf("kvevents: MaxConnections must be positive, got %d", c.MaxConnections)
	case c.HandshakeTimeout <= 0:
		return fmt.Errorf("kvevents: HandshakeTimeout must be positive, got %s", c.HandshakeTimeout)
	case c.MaxEventsPerBatch < 1:
		return fmt.Errorf("kvevents: MaxEventsPerBatch must be positive, got %d", c.MaxEventsPerBatch)
	case c.MaxHashesPerEvent < 1:
		return fmt.Errorf("kvevents: MaxHashesPerEvent must be positive, got %d", c.MaxHashesPerEvent)
	case c.ResolveEvery <= 0:
		return fmt.Errorf("kvevents: ResolveEvery must be positive, got %s", c.ResolveEvery)
	}
	return c.IndexConfig().Validate()
}

var errEndpoint = errors.New("kvevents: endpoint must be tcp://HOST:PORT")

// ListenAddr turns a ZeroMQ tcp endpoint into the host:port to listen on ("*" becomes every
// address).
func ListenAddr(endpoint string) (string, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", fmt.Errorf("%w, got %q", errEndpoint, endpoint)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil || port == "" {
		return "", fmt.Errorf("%w, got %q", errEndpoint, endpoint)
	}
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, port), nil
}
