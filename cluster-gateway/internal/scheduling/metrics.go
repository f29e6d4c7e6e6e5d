package scheduling

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Decision outcomes (label values of switchyard_gateway_scheduling_decisions_total).
const (
	outcomeOK           = "ok"
	outcomeUnknownModel = "unknown_model"
	outcomeNoEndpoints  = "no_endpoints"
	outcomeSaturated    = "saturated"
	outcomeSLO          = "slo_unattainable"
)

// metrics are the scheduler's collectors.
type metrics struct {
	latency   prometheus.Observer
	picks     *prometheus.CounterVec
	decisions *prometheus.CounterVec
	outcomes  map[error]prometheus.Counter
	ok        prometheus.Counter
	// pd counts prefill/decode decisions by framework.PD* value.
	pd map[string]prometheus.Counter
}

// newMetrics builds the collectors; the prefill/decode counter only for a pd profile.
func newMetrics(reg prometheus.Registerer, profile string, pd bool) *metrics {
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchyard_gateway_scheduling_duration_seconds",
		Help:    "Time to make one scheduling decision (filters, scorers, picker).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 16),
	}, []string{"profile"})
	m := &metrics{
		latency: lat.WithLabelValues(profile),
		picks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_scheduling_picks_total",
			Help: "Requests scheduled to each endpoint (first choice).",
		}, []string{"endpoint"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_scheduling_decisions_total",
			Help: "Scheduling decisions by outcome: ok, unknown_model, no_endpoints, saturated, slo_unattainable.",
		}, []string{"outcome"}),
	}
	pdVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_gateway_pd_decisions_total",
		Help: "Prefill/decode decisions of a pd profile: prefill-decode (a prefill endpoint computes the prompt), " +
			"below-threshold, no-prefill-endpoint and local-prefill (the decode endpoint prefills itself).",
	}, []string{"decision"})
	m.pd = map[string]prometheus.Counter{}
	for _, d := range framework.PDDecisions {
		m.pd[d] = pdVec.WithLabelValues(d)
	}
	m.ok = m.decisions.WithLabelValues(outcomeOK)
	m.outcomes = map[error]prometheus.Counter{
		ErrUnknownModel:    m.decisions.WithLabelValues(outcomeUnknownModel),
		ErrNoEndpoints:     m.decisions.WithLabelValues(outcomeNoEndpoints),
		ErrSaturated:       m.decisions.WithLabelValues(outcomeSaturated),
		ErrSLOUnattainable: m.decisions.WithLabelValues(outcomeSLO),
	}
	if reg != nil {
		reg.MustRegister(lat, m.picks, m.decisions)
		if pd {
			reg.MustRegister(pdVec)
		}
	}
	return m
}

// predictionObserver is implemented by TTFT predictors that report each prediction beside the
// TTFT then measured (predicted-ttft-scorer).
type predictionObserver interface {
	ObservePredictions(f func(predicted, measured time.Duration))
}

// observePredictions registers switchyard_gateway_ttft_prediction_ratio on reg (nil: kept but not
// registered) and feeds it from p.
func observePredictions(reg prometheus.Registerer, p predictionObserver) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "switchyard_gateway_ttft_prediction_ratio",
		Help: "Measured time to first token over the predicted-ttft-scorer's prediction for the pod the request was sent " +
			"to (1 is exact; above 1, the prediction was short).",
		Buckets: []float64{0.25, 0.5, 0.67, 0.8, 0.9, 1, 1.11, 1.25, 1.5, 2, 4},
	})
	if reg != nil {
		reg.MustRegister(h)
	}
	p.ObservePredictions(func(predicted, measured time.Duration) {
		if predicted > 0 {
			h.Observe(measured.Seconds() / predicted.Seconds())
		}
	})
}

// forget drops the per-endpoint series of a removed endpoint.
func (m *metrics) forget(addr string) { m.picks.DeleteLabelValues(addr) }
