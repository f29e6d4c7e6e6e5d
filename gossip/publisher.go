package gossip

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// PublisherConfig sets when a Publisher sends.
type PublisherConfig struct {
	// Interval is how often the source is polled and the shortest time between two publications.
	// Default 250 ms.
	Interval time.Duration
	// Heartbeat is the longest time between two publications, changed or not. Default 2 s.
	Heartbeat time.Duration
	// Threshold is the relative change of any figure (|a-b| / max(|a|,|b|,1)) that is significant.
	// Default 0.05. Models or adapters appearing or leaving, and a flip of the saturated flag, are
	// always significant.
	Threshold float64
}

// DefaultPublisherConfig returns the documented defaults.
func DefaultPublisherConfig() PublisherConfig {
	return PublisherConfig{Interval: 250 * time.Millisecond, Heartbeat: 2 * time.Second, Threshold: 0.05}
}

// Validate reports a field out of range.
func (c PublisherConfig) Validate() error {
	if c.Interval <= 0 || c.Heartbeat < c.Interval {
		return fmt.Errorf("gossip: publisher Interval %v must be positive and at most Heartbeat %v", c.Interval, c.Heartbeat)
	}
	if c.Threshold < 0 || math.IsNaN(c.Threshold) {
		return fmt.Errorf("gossip: publisher Threshold %v must be non-negative", c.Threshold)
	}
	return nil
}

// SummaryPublisher is what a Publisher sends through; *Node implements it.
type SummaryPublisher interface {
	Publish(*gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error)
}

// Publisher polls a gateway's capacity and publishes it when a figure moved significantly (at most
// once per Interval) and otherwise once per Heartbeat.
type Publisher struct {
	cfg    PublisherConfig
	to     SummaryPublisher
	source func() *gossipv1.CapacitySummary
}

// NewPublisher returns a publisher that sends source's summaries to to. source is called from
// Run's goroutine only; it returns nil when there is nothing to publish yet.
func NewPublisher(to SummaryPublisher, source func() *gossipv1.CapacitySummary, cfg PublisherConfig) (*Publisher, error) {
	if to == nil || source == nil {
		return nil, errors.New("gossip: publisher needs a destination and a source")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, to: to, source: source}, nil
}

// Run polls and publishes until ctx is done. It returns nil then, or the first publish error.
func (p *Publisher) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	var last *gossipv1.CapacitySummary
	var lastAt time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			next := p.source()
			if next == nil {
				continue
			}
			if last != nil && now.Sub(lastAt) < p.cfg.Heartbeat && !Changed(last, next, p.cfg.Threshold) {
				continue
			}
			if _, err := p.to.Publish(next); err != nil {
				return err
			}
			last, lastAt = next, now
		}
	}
}

// Changed reports whether next differs significantly from prev (see PublisherConfig.Threshold).
func Changed(prev, next *gossipv1.CapacitySummary, threshold float64) bool {
	if len(prev.GetModels()) != len(next.GetModels()) || prev.GetGatewayUrl() != next.GetGatewayUrl() {
		return true
	}
	for i, a := range prev.GetModels() {
		if modelChanged(a, next.GetModels()[i], threshold) {
			return true
		}
	}
	return false
}

func modelChanged(a, b *gossipv1.ModelCapacity, th float64) bool {
	if a.GetName() != b.GetName() || a.GetSaturated() != b.GetSaturated() || len(a.GetAdapters()) != len(b.GetAdapters()) {
		return true
	}
	figures := [][2]float64{
		{float64(a.GetReadyPods()), float64(b.GetReadyPods())},
		{float64(a.GetFreeKvTokens()), float64(b.GetFreeKvTokens())},
		{float64(a.GetTotalKvTokens()), float64(b.GetTotalKvTokens())},
		{float64(a.GetQueueDepth()), float64(b.GetQueueDepth())},
		{float64(a.GetRunning()), float64(b.GetRunning())},
		{float64(a.GetSaturation()), float64(b.GetSaturation())},
		{float64(a.GetPredictedTtftMs()), float64(b.GetPredictedTtftMs())},
	}
	for _, f := range figures {
		if moved(f[0], f[1], th) {
			return true
		}
	}
	for i, x := range a.GetAdapters() {
		y := b.GetAdapters()[i]
		if x.GetName() != y.GetName() || x.GetResidentPods() != y.GetResidentPods() ||
			moved(float64(x.GetQueueDepth()), float64(y.GetQueueDepth()), th) {
			return true
		}
	}
	return false
}

func moved(a, b, th float64) bool {
	return math.Abs(a-b) > th*math.Max(math.Max(math.Abs(a), math.Abs(b)), 1)
}
