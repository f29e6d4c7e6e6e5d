// Package saturation provides the saturation plugins. saturation-filter (Switchyard's) removes
// saturated endpoints: queue at or over the threshold, KV use at or over the threshold, metrics
// stale or failing, or ejected by passive health; when it removes every candidate the scheduler
// answers "saturated" so the front door can queue. utilization-detector and concurrency-detector
// reproduce GIE's detectors: as filters they drop saturated endpoints unless that would drop all,
// and as the pool's saturation detector they report average load, >= 1 meaning saturated.
package saturation

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Plugin types.
const (
	FilterType      = "saturation-filter"
	UtilizationType = "utilization-detector"
	ConcurrencyType = "concurrency-detector"
)

func init() {
	framework.Register(FilterType, FilterFactory)
	framework.Register(UtilizationType, UtilizationFactory)
	framework.Register(ConcurrencyType, ConcurrencyFactory)
}

// Defaults shared by saturation-filter and utilization-detector: framework.DefaultSaturation's.
// GIE's utilization-detector defaults its staleness to 200ms; Switchyard uses 2s because its
// scrape interval grows with the pod count (200ms at 1,000 pods).
const (
	DefaultQueueDepthThreshold       = framework.DefaultSaturationQueue
	DefaultKVCacheUtilThreshold      = framework.DefaultSaturationKV
	DefaultMetricsStalenessThreshold = framework.DefaultSaturationStaleness
)

// Params are the utilization thresholds (GIE's utilization-detector parameter names).
type Params struct {
	// QueueDepthThreshold: a pod with this many waiting requests is saturated. Default 5.
	QueueDepthThreshold *int `json:"queueDepthThreshold,omitempty"`
	// KVCacheUtilThreshold: a pod with this KV use (0..1] is saturated. Default 0.8.
	KVCacheUtilThreshold *float64 `json:"kvCacheUtilThreshold,omitempty"`
	// MetricsStalenessThreshold: metrics older than this make a pod saturated. Default "2s".
	MetricsStalenessThreshold *framework.Duration `json:"metricsStalenessThreshold,omitempty"`
	// Headroom relaxes the per-pod limits to threshold*(1+headroom). Default 0.
	Headroom *float64 `json:"headroom,omitempty"`
}

// Thresholds are validated utilization limits: the gateway's one definition of a saturated
// endpoint, framework.Saturation, which this package's plugins and the capacity publisher share.
type Thresholds = framework.Saturation

// DefaultThresholds returns queue 5, KV 0.8, staleness 2s, no headroom.
func DefaultThresholds() Thresholds { return framework.DefaultSaturation() }

func (p Params) thresholds() (Thresholds, error) {
	t := DefaultThresholds()
	if p.QueueDepthThreshold != nil {
		t.Queue = *p.QueueDepthThreshold
	}
	if p.KVCacheUtilThreshold != nil {
		t.KV = *p.KVCacheUtilThreshold
	}
	if p.MetricsStalenessThreshold != nil {
		t.Staleness = p.MetricsStalenessThreshold.Duration
	}
	if p.Headroom != nil {
		t.Headroom = *p.Headroom
	}
	return t, t.Validate()
}
