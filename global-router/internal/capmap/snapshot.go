package capmap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// Bounds of a snapshot: the regions and clusters it lists, and the models named per cluster.
const (
	maxRegions          = 64
	maxClusters         = 1000
	maxModelsPerCluster = 16
	// maxFlowSamples bounds the samples the flows' rates are measured over.
	maxFlowSamples = 64
)

// Snapshot is what the map shows at one moment; the page renders it, and /map/snapshot answers
// it as JSON.
type Snapshot struct {
	// Region is this router's region; Time when the snapshot was taken.
	Region string    `json:"region"`
	Time   time.Time `json:"time"`
	// Regions are every region the router knows, by name, each with its clusters.
	Regions []Region `json:"regions"`
	// Flows are the requests this router sent to each region that answered them.
	Flows []Flow `json:"flows"`
	// Decisions are the router's last routing decisions, newest first.
	Decisions []Decision `json:"decisions"`
	// Truncated is set when regions or clusters past the map's bounds were left out.
	Truncated bool `json:"truncated,omitempty"`
}

// Region is one region: its capacity over its available clusters (the region capacity
// metrics' figures) and its clusters.
type Region struct {
	Name        string    `json:"name"`
	Local       bool      `json:"local"`
	Drained     bool      `json:"drained"`
	Available   int       `json:"available_clusters"`
	Unavailable int       `json:"unavailable_clusters"`
	ReadyPods   uint64    `json:"ready_pods"`
	QueueDepth  uint64    `json:"queue_depth"`
	FreeKV      uint64    `json:"free_kv_tokens"`
	TotalKV     uint64    `json:"total_kv_tokens"`
	Clusters    []Cluster `json:"clusters"`
}

// Cluster is one cluster as the admin API lists it.
type Cluster struct {
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	Stale   bool   `json:"stale"`
	Drained bool   `json:"drained"`
	// RegionDrained is set when the cluster's region is drained.
	RegionDrained bool     `json:"region_drained"`
	ReadyPods     uint32   `json:"ready_pods"`
	FreeKV        uint64   `json:"free_kv_tokens"`
	TotalKV       uint64   `json:"total_kv_tokens"`
	QueueDepth    uint32   `json:"queue_depth"`
	Running       uint32   `json:"running"`
	InFlight      uint32   `json:"in_flight"`
	RTTMs         float64  `json:"rtt_ms"`
	SignalAgeMs   uint32   `json:"signal_age_ms"`
	Models        []string `json:"models"`
}

// Flow is the requests this router's region sent to one region and had answered there.
type Flow struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Total counts them since the router started; PerSecond is their rate over the flow window.
	Total     uint64  `json:"total"`
	PerSecond float64 `json:"per_second"`
}

// snapshots builds snapshots and keeps the newest, encoded, for Interval: every stream of one
// interval shares one build and one encoding.
type snapshots struct {
	s *Server

	mu      sync.Mutex
	at      time.Time
	encoded []byte
	// samples are the answer counts of past builds, oldest first, for the flows' rates.
	samples []flowSample
}

type flowSample struct {
	at       time.Time
	answered map[string]uint64
}

// current returns the newest snapshot's JSON, building it when the kept one is older than
// Interval.
func (ss *snapshots) current() ([]byte, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.s.cfg.Now()
	if ss.encoded != nil && now.Sub(ss.at) < ss.s.cfg.Interval {
		return ss.encoded, nil
	}
	b, err := json.Marshal(ss.build(now))
	if err != nil {
		return nil, fmt.Errorf("capmap: encode snapshot: %w", err)
	}
	ss.at, ss.encoded = now, b
	return b, nil
}

// build takes a snapshot now; ss.mu is held.
func (ss *snapshots) build(now time.Time) Snapshot {
	s := ss.s
	snap := Snapshot{Region: s.cfg.Region, Time: now, Decisions: s.deps.Outcomes.Decisions()}
	byName := map[string]int{}
	for _, rc := range s.deps.Regions.RegionCapacity() {
		if len(snap.Regions) == maxRegions {
			snap.Truncated = true
			break
		}
		byName[rc.Region] = len(snap.Regions)
		snap.Regions = append(snap.Regions, Region{Name: rc.Region, Local: rc.Region == s.cfg.Region,
			Available: rc.Available, Unavailable: rc.Unavailable, ReadyPods: rc.ReadyPods, QueueDepth: rc.QueueDepth,
			FreeKV: rc.FreeKVTokens, TotalKV: rc.TotalKVTokens})
	}
	n := 0
	for _, c := range s.deps.Clusters.ClusterTable() {
		i, ok := byName[c.GetRegion()]
		if !ok {
			i, ok = byName["other"] // a region the capacity metrics sum under other
		}
		if !ok || n == maxClusters {
			snap.Truncated = true
			continue
		}
		n++
		r := &snap.Regions[i]
		r.Drained = r.Drained || c.GetRegionDrained()
		r.Clusters = append(r.Clusters, clusterOf(c))
	}
	snap.Flows = ss.flows(now)
	return snap
}

// clusterOf converts the admin API's cluster.
func clusterOf(c *adminv1.Cluster) Cluster {
	out := Cluster{Name: bound(c.GetName()), Healthy: c.GetHealthy(), Stale: c.GetStale(), Drained: c.GetDrained(),
		RegionDrained: c.GetRegionDrained(), FreeKV: c.GetFreeKvTokens(), TotalKV: c.GetTotalKvTokens(),
		QueueDepth: c.GetQueueDepth(), Running: c.GetRunning(), InFlight: c.GetInFlight(), RTTMs: c.GetRttMs(),
		SignalAgeMs: c.GetSignalAgeMs(), Models: []string{}}
	for _, m := range c.GetModels() {
		out.ReadyPods += m.GetReadyPods()
		if len(out.Models) < maxModelsPerCluster {
			out.Models = append(out.Models, bound(m.GetName()))
		}
	}
	return out
}

// flows returns the flows now, their rates over the samples of the last FlowWindow; ss.mu is
// held.
func (ss *snapshots) flows(now time.Time) []Flow {
	answered := ss.s.deps.Outcomes.Answered()
	window := ss.s.cfg.FlowWindow
	// Keep the newest sample at least a window old and every younger one.
	for len(ss.samples) > 1 && (now.Sub(ss.samples[1].at) >= window || len(ss.samples) >= maxFlowSamples) {
		ss.samples = ss.samples[1:]
	}
	var base *flowSample
	if len(ss.samples) > 0 && now.Sub(ss.samples[0].at) > 0 {
		base = &ss.samples[0]
	}
	ss.samples = append(ss.samples, flowSample{at: now, answered: answered})
	out := make([]Flow, 0, len(answered))
	for _, to := range sortedKeys(answered) {
		f := Flow{From: ss.s.cfg.Region, To: to, Total: answered[to]}
		if base != nil {
			f.PerSecond = float64(answered[to]-base.answered[to]) / now.Sub(base.at).Seconds()
		}
		out = append(out, f)
	}
	return out
}

// serveSnapshot answers the current snapshot as JSON.
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	b, err := s.snaps.current()
	if err != nil {
		s.internalError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
