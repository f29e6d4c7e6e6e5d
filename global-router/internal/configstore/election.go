package configstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ElectionConfig configures one candidate of a leader election.
type ElectionConfig struct {
	// Name of the election, e.g. "dns-sync"; its keys live under ElectionPrefix + Name. Required.
	Name string
	// Candidate identifies this candidate to observers, e.g. the router's region and host. Required.
	Candidate string
	// TTL of the candidate's etcd lease: how long a leader that vanished without resigning keeps
	// the leadership. Default 5 s; at least 1 s (whole seconds).
	TTL time.Duration
	// RetryInterval is the pause before campaigning again after a failure. Default 1 s.
	RetryInterval time.Duration
}

// DefaultElectionConfig returns the defaults for candidate in the election name.
func DefaultElectionConfig(name, candidate string) ElectionConfig {
	return ElectionConfig{Name: name, Candidate: candidate, TTL: 5 * time.Second, RetryInterval: time.Second}
}

// Validate reports the first invalid field.
func (c ElectionConfig) Validate() error {
	switch {
	case c.Name == "" || strings.Contains(c.Name, "/"):
		return fmt.Errorf("%w: election Name %q must be non-empty without '/'", ErrInvalid, c.Name)
	case c.Candidate == "":
		return fmt.Errorf("%w: election Candidate is empty", ErrInvalid)
	case c.TTL < time.Second:
		return fmt.Errorf("%w: election TTL %s is under 1s", ErrInvalid, c.TTL)
	case c.RetryInterval <= 0:
		return fmt.Errorf("%w: election RetryInterval must be positive", ErrInvalid)
	}
	return nil
}

// Elector campaigns in a leader election while Run runs; at most one candidate of an election is
// leader at a time (while etcd and the leases behave). Its methods are safe for concurrent use.
type Elector struct {
	client *clientv3.Client
	cfg    ElectionConfig
	logger *slog.Logger
	leader atomic.Bool
}

// NewElector returns a candidate over client.
func NewElector(client *clientv3.Client, cfg ElectionConfig, logger *slog.Logger) (*Elector, error) {
	if client == nil {
		return nil, errors.New("configstore: nil etcd client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Elector{client: client, cfg: cfg, logger: logger}, nil
}

// IsLeader reports whether this candidate holds the leadership now.
func (e *Elector) IsLeader() bool { return e.leader.Load() }

// Run campaigns until ctx is done: it waits to be elected, leads until its lease is lost (then it
// campaigns again) and resigns when ctx is done. It returns nil when ctx is done.
func (e *Elector) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := e.term(ctx); err != nil && ctx.Err() == nil {
			e.logger.Warn("leader election interrupted", "election", e.cfg.Name, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(e.cfg.RetryInterval):
			}
		}
	}
	return nil
}

// term runs one session: campaign, lead, then resign or lose the lease.
func (e *Elector) term(ctx context.Context) error {
	session, err := concurrency.NewSession(
		e.client,
		concurrency.WithTTL(int(e.cfg.TTL/time.Second)),
		concurrency.WithContext(ctx),
	)
	if err != nil {
		return fmt.Errorf("configstore: election session: %w", err)
	}
	defer e.closeSession(session)
	election := concurrency.NewElection(session, ElectionPrefix+e.cfg.Name)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // a lost lease ends the campaign too
		select {
		case <-session.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	if err := election.Campaign(cctx, e.cfg.Candidate); err != nil {
		return fmt.Errorf("configstore: campaign: %w", err)
	}
	e.setLeader(true)
	defer e.setLeader(false)
	select {
	case <-ctx.Done():
		e.setLeader(false)
		e.resign(election)
		return nil
	case <-session.Done():
		return errors.New("configstore: election lease lost")
	}
}

// resign gives the leadership up promptly so another candidate takes over without waiting for the
// lease to expire.
func (e *Elector) resign(election *concurrency.Election) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := election.Resign(ctx); err != nil {
		e.logger.Warn("resign failed; the lease will expire", "election", e.cfg.Name, "err", err)
	}
}

// closeSession revokes the session's lease, which deletes any key the candidate still holds.
func (e *Elector) closeSession(session *concurrency.Session) {
	e.leader.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = e.client.Revoke(ctx, session.Lease())
	session.Orphan()
}

func (e *Elector) setLeader(v bool) {
	if e.leader.Swap(v) != v {
		e.logger.Info("leadership changed", "election", e.cfg.Name, "candidate", e.cfg.Candidate, "leader", v)
	}
}

// Leader returns the candidate that leads the election now; ErrNotFound when nobody does.
func (e *Elector) Leader(ctx context.Context) (string, error) {
	resp, err := e.client.Get(ctx, ElectionPrefix+e.cfg.Name+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("configstore: election leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%w: no leader of election %q", ErrNotFound, e.cfg.Name)
	}
	return string(resp.Kvs[0].Value), nil
}
