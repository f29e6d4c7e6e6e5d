package autoscale

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	desired *prometheus.GaugeVec
	ready   *prometheus.GaugeVec
	ratio   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_gateway_desired_replicas",
			Help: "Replicas each base model's pool should have, from KV cache use, requests waiting per pod and " +
				"predicted TTFT against their targets (--autoscale-*); for KEDA's Prometheus scaler or an HPA " +
				"external metric with a target average value of 1.",
		}, []string{"model"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_gateway_ready_replicas",
			Help: "Ready pods serving each base model: the count switchyard_gateway_desired_replicas is relative to.",
		}, []string{"model"}),
		ratio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_gateway_autoscale_ratio",
			Help: "Each base model's pool figure over its target, by signal (kv, queue, ttft): above 1 asks for " +
				"more replicas, below 1 for fewer; the highest decides.",
		}, []string{"model", "signal"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.desired, m.ready, m.ratio} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("autoscale metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) set(r Recommendation) {
	m.desired.WithLabelValues(r.Model).Set(float64(r.Desired))
	m.ready.WithLabelValues(r.Model).Set(float64(r.Ready))
	m.ratio.WithLabelValues(r.Model, SignalKV).Set(r.Ratios.KV)
	m.ratio.WithLabelValues(r.Model, SignalQueue).Set(r.Ratios.Queue)
	m.ratio.WithLabelValues(r.Model, SignalTTFT).Set(r.Ratios.TTFT)
}

func (m *metrics) drop(model string) {
	m.desired.DeleteLabelValues(model)
	m.ready.DeleteLabelValues(model)
	for _, s := range []string{SignalKV, SignalQueue, SignalTTFT} {
		m.ratio.DeleteLabelValues(model, s)
	}
}
