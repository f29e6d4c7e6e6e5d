package admin

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/gossip"
)

// ListClusters returns the cluster table: one entry per cluster the router has heard of (or per
// cluster listing the requested model), ordered by region then name.
func (s *Server) ListClusters(
	_ context.Context,
	req *connect.Request[adminv1.ListClustersRequest],
) (*connect.Response[adminv1.ListClustersResponse], error) {
	if err := validateModelFilter(req.Msg.GetModel()); err != nil {
		return nil, err
	}
	list := s.clusters(req.Msg.GetModel(), s.deps.Config.Snapshot())
	return connect.NewResponse(&adminv1.ListClustersResponse{Clusters: list}), nil
}

// WatchClusters sends the cluster table at once, then again whenever it changes (a gossip
// summary or membership change, a config change, or a passive-health change noticed at the next
// resync), at most every interval, until the client goes away.
func (s *Server) WatchClusters(
	ctx context.Context,
	req *connect.Request[adminv1.WatchClustersRequest],
	stream *connect.ServerStream[adminv1.WatchClustersResponse],
) error {
	model := req.Msg.GetModel()
	if err := validateModelFilter(model); err != nil {
		return err
	}
	s.metrics.watches.Inc()
	defer s.metrics.watches.Dec()
	return s.watch(ctx, model, s.watchInterval(req.Msg.GetIntervalMs()), stream.Send)
}

// watch sends the table for model, then again on every change, pausing interval after each
// message. It returns nil when ctx ends and the error of a failed send.
func (s *Server) watch(
	ctx context.Context,
	model string,
	interval time.Duration,
	send func(*adminv1.WatchClustersResponse) error,
) error {
	changes, stop := s.deps.Gossip.Subscribe()
	defer stop()
	resync := time.NewTicker(s.cfg.WatchResync)
	defer resync.Stop()
	var last []*adminv1.Cluster
	for first := true; ; first = false {
		view := s.deps.Config.Snapshot() // before reading, so no change slips between
		list := s.clusters(model, view)
		if first || !sameTable(last, list) {
			if err := send(&adminv1.WatchClustersResponse{Clusters: list}); err != nil {
				return err
			}
			last = list
			if !pause(ctx, interval) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-view.Replaced():
		case <-resync.C:
		}
	}
}

// watchInterval returns the pause between two messages for a client's interval_ms.
func (s *Server) watchInterval(ms uint32) time.Duration {
	if ms == 0 {
		return s.cfg.WatchInterval
	}
	return max(time.Duration(ms)*time.Millisecond, s.cfg.MinWatchInterval)
}

func validateModelFilter(model string) error {
	if model == "" {
		return nil
	}
	if err := configstore.ValidateModel(model); err != nil {
		return invalidField("model", "%v", err)
	}
	return nil
}

// clusters builds the cluster table for model ("" for every cluster), ordered by region, name.
func (s *Server) clusters(model string, view *configstore.View) []*adminv1.Cluster {
	entries := s.deps.Clusters.View(model, nil)
	live := liveClusters(s.deps.Gossip.Snapshot())
	inFlight := s.inFlight(model, entries)
	out := make([]*adminv1.Cluster, 0, len(entries))
	for _, e := range entries {
		if model != "" && !listsModel(e.Summary, model) {
			continue
		}
		alive, known := live[e.Cluster.Name]
		c := clusterOf(e, view, alive || !known)
		c.InFlight = uint32(inFlight[e.Cluster.Name])
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *adminv1.Cluster) int {
		if r := strings.Compare(a.GetRegion(), b.GetRegion()); r != 0 {
			return r
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

// inFlight returns the requests this router sent each cluster since its summary. The table
// counts them for a cluster that serves the viewed model; with no model filter, each cluster is
// viewed for a model it serves (one table view per distinct model).
func (s *Server) inFlight(model string, entries []clustertable.Entry) map[string]int {
	out := make(map[string]int, len(entries))
	if model != "" {
		for _, e := range entries {
			out[e.Cluster.Name] = e.Cluster.InFlight
		}
		return out
	}
	byModel := map[string][]string{}
	for _, e := range entries {
		if ms := e.Summary.GetModels(); len(ms) > 0 {
			byModel[ms[0].GetName()] = append(byModel[ms[0].GetName()], e.Cluster.Name)
		}
	}
	for m, names := range byModel {
		for _, e := range s.deps.Clusters.View(m, nil) {
			if slices.Contains(names, e.Cluster.Name) {
				out[e.Cluster.Name] = e.Cluster.InFlight
			}
		}
	}
	return out
}

// liveClusters reports, per cluster, whether any of its gateway replicas is still a live gossip
// member (alive, suspect, or not yet seen in the membership).
func liveClusters(snap []gossip.Summary) map[string]bool {
	out := map[string]bool{}
	for _, s := range snap {
		dead := s.State == gossip.StateDead || s.State == gossip.StateLeft
		out[s.Cluster] = out[s.Cluster] || !dead
	}
	return out
}

// listsModel reports whether a summary lists model as a base model or an adapter.
func listsModel(sum *gossipv1.CapacitySummary, model string) bool {
	for _, m := range sum.GetModels() {
		if m.GetName() == model {
			return true
		}
		for _, a := range m.GetAdapters() {
			if a.GetName() == model {
				return true
			}
		}
	}
	return false
}

// clusterOf converts a table entry; alive says whether a gateway replica is a live member.
func clusterOf(e clustertable.Entry, view *configstore.View, alive bool) *adminv1.Cluster {
	c := &adminv1.Cluster{
		Name:          e.Cluster.Name,
		Region:        e.Cluster.Region,
		Healthy:       alive && !e.Cluster.Unhealthy,
		Stale:         e.Cluster.Stale,
		SignalAgeMs:   uint32(min(e.Age.Milliseconds(), math.MaxUint32)),
		Drained:       view.ClusterDrained(e.Cluster.Name),
		RegionDrained: view.RegionDrained(e.Cluster.Region),
		GatewayUrls:   slices.Clone(e.URLs),
		RttMs:         millis(e.Cluster.RTT),
	}
	for _, m := range e.Summary.GetModels() {
		cm := modelOf(m)
		c.Models = append(c.Models, cm)
		c.FreeKvTokens += cm.GetFreeKvTokens()
		c.TotalKvTokens += cm.GetTotalKvTokens()
		c.QueueDepth += cm.GetQueueDepth()
		c.Running += cm.GetRunning()
	}
	return c
}

func modelOf(m *gossipv1.ModelCapacity) *adminv1.ClusterModel {
	out := &adminv1.ClusterModel{
		Name:            m.GetName(),
		ReadyPods:       m.GetReadyPods(),
		FreeKvTokens:    m.GetFreeKvTokens(),
		TotalKvTokens:   m.GetTotalKvTokens(),
		QueueDepth:      m.GetQueueDepth(),
		Running:         m.GetRunning(),
		Saturation:      float64(m.GetSaturation()),
		PredictedTtftMs: float64(m.GetPredictedTtftMs()),

		MeanPredictedTtftMs: float64(m.GetMeanPredictedTtftMs()),
	}
	if m.GetSaturated() {
		out.Saturation = 1
	}
	for _, a := range m.GetAdapters() {
		out.Adapters = append(out.Adapters, a.GetName())
	}
	return out
}

// sameTable reports whether two tables differ only in the figures that move all the time: the
// signals' ages and the RTT estimates.
func sameTable(a, b []*adminv1.Cluster) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := proto.CloneOf(a[i]), proto.CloneOf(b[i])
		x.SignalAgeMs, y.SignalAgeMs, x.RttMs, y.RttMs = 0, 0, 0, 0
		if !proto.Equal(x, y) {
			return false
		}
	}
	return true
}

// millis converts a duration to fractional milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pause waits d; it returns false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ClusterTable returns what ListClusters answers with no model filter: every cluster the router
// has heard of, ordered by region then name. The capacity map shows it.
func (s *Server) ClusterTable() []*adminv1.Cluster {
	return s.clusters("", s.deps.Config.Snapshot())
}
