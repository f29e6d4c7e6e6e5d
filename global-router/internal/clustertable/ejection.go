package clustertable

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/gossip"
)

// refusalLogEvery bounds how often a refused ejection is logged: while the cap is reached, every
// further failure of a failing cluster is refused (and counted).
const refusalLogEvery = 10 * time.Second

// freshClusters returns the sorted names of the clusters with at least one fresh summary in
// snap: the pool the ejection cap is a share of.
func freshClusters(snap []gossip.Summary) []string {
	var out []string
	for i := range snap {
		if !snap[i].Stale && !slices.Contains(out, snap[i].Cluster) {
			out = append(out, snap[i].Cluster)
		}
	}
	slices.Sort(out)
	return out
}

// admitEjection reports whether cluster may be ejected at now: fewer than MaxEjected of the
// fresh clusters (cluster aside) are ejected. A cluster without a fresh summary counts as one
// more member of the pool (it is failing requests routed to it). t.mu must be held.
func (t *Table) admitEjection(cluster string, fresh []string, now time.Time) bool {
	n, ejected := len(fresh), 0
	if _, ok := slices.BinarySearch(fresh, cluster); !ok {
		n++
	}
	for _, name := range fresh {
		if st := t.states[name]; name != cluster && st != nil && st.health.ejected(now) {
			ejected++
		}
	}
	ok := ejected < MaxEjected(n, t.cfg.Ejection.MaxEjectionPercent)
	if ok {
		t.metrics.ejections.WithLabelValues(ejectionEjected).Inc()
	}
	return ok
}

// refused counts and (at most every refusalLogEvery) logs an ejection of cluster the cap
// refused. t.mu must be held.
func (t *Table) refused(cluster string, fresh []string, now time.Time) {
	t.metrics.ejections.WithLabelValues(ejectionRefused).Inc()
	if now.Sub(t.refusalLogged) < refusalLogEvery {
		return
	}
	t.refusalLogged = now
	t.cfg.Logger.Warn("ejection refused: the cluster ejection cap is reached; the cluster stays a candidate",
		"cluster", cluster, "fresh_clusters", len(fresh), "max_ejection_percent", t.cfg.Ejection.MaxEjectionPercent)
}

// Results of an ejection decision (the ejections metric's label).
const (
	ejectionEjected = "ejected"
	ejectionRefused = "refused"
)

// metrics are the table's collectors.
type metrics struct {
	ejections *prometheus.CounterVec
	decisions [2]prometheus.Counter // by path: pathReduced, pathFull
}

// decision counts a Route decision made over path.
func (m *metrics) decision(path int) { m.decisions[path].Inc() }

// newMetrics creates the table's collectors and registers them on reg (nil: not registered).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_router_cluster_ejections_total",
		Help: "Passive-health ejections of clusters, by result: ejected, or refused because the share of clusters ejected " +
			"at once had reached --max-ejection-percent.",
	}, []string{"result"})}
	for _, r := range []string{ejectionEjected, ejectionRefused} {
		m.ejections.WithLabelValues(r)
	}
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_router_decisions_total",
		Help: "Routing decisions of requests, by path: reduced (over the clusters that can matter, proven to decide as " +
			"over every cluster) or full (over every cluster: the proof did not hold, or a cluster is in slow start).",
	}, []string{"path"})
	m.decisions[pathReduced] = decisions.WithLabelValues("reduced")
	m.decisions[pathFull] = decisions.WithLabelValues("full")
	if reg != nil {
		reg.MustRegister(m.ejections, decisions)
	}
	return m
}
