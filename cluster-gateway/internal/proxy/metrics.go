package proxy

import "github.com/prometheus/client_golang/prometheus"

// Body kinds of a truncated answer (the truncated metric's label).
const (
	bodyStream = "stream" // a server-sent event stream
	bodyJSON   = "json"   // any other body (a JSON answer)
)

// metrics are the HTTP front door's own; the request metrics both doors share are the
// pipeline's.
type metrics struct {
	retries *prometheus.CounterVec
	// truncated counts answers aborted because the model server's body broke after the
	// response headers had been sent.
	truncated *prometheus.CounterVec
}

// newMetrics creates the proxy's metrics and registers them on reg (nil registers nothing).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_retries_total",
			Help: "Requests retried on another endpoint before the first response byte, by reason.",
		}, []string{"reason"}),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_upstream_truncated_total",
			Help: "Answers aborted because the model server's body broke after the response headers were sent " +
				"(connection closed short of Content-Length or before the last chunk), by body kind (stream, json).",
		}, []string{"body"}),
	}
	for _, b := range []string{bodyStream, bodyJSON} {
		m.truncated.WithLabelValues(b)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.retries, m.truncated} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) retry(reason string) { m.retries.WithLabelValues(reason).Inc() }

func (m *metrics) truncate(sse bool) {
	if sse {
		m.truncated.WithLabelValues(bodyStream).Inc()
		return
	}
	m.truncated.WithLabelValues(bodyJSON).Inc()
}
