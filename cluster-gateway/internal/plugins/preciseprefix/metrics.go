package preciseprefix

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type decisionMetrics struct {
	decisions *prometheus.CounterVec // mode, reason
}

// registerMetrics registers the scorer's counter on reg (a prometheus.Registerer, or nil for
// none); scorers built from one config share it.
func registerMetrics(reg any) *decisionMetrics {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_gateway_precise_prefix_decisions_total",
		Help: "Requests scored by the precise-prefix-cache-scorer, by mode (precise, or approximate when it fell back) and reason.",
	}, []string{"mode", "reason"})
	r, ok := reg.(prometheus.Registerer)
	if !ok || r == nil {
		return &decisionMetrics{decisions: c}
	}
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return &decisionMetrics{decisions: are.ExistingCollector.(*prometheus.CounterVec)}
		}
		panic(err)
	}
	return &decisionMetrics{decisions: c}
}
