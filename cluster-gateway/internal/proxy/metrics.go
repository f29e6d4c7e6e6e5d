package proxy

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

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
	// noRoute counts requests for a path the proxy does not serve (404) or with a method the
	// path is not served with (405), by status.
	noRoute *prometheus.CounterVec
	// pdFallbacks counts split requests retried on their decode pod without the prefill pod,
	// which failed, by the decode pod's status.
	pdFallbacks *prometheus.CounterVec
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
		noRoute: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_no_route_requests_total",
			Help: "Requests refused because the HTTP proxy serves no such route, by status: 404 (unknown path) or 405 (a path " +
				"served with another method).",
		}, []string{"code"}),
		pdFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_pd_fallbacks_total",
			Help: "Prefill/decode requests whose decode pod answered 500, 502 or 504 for a failed remote prefill and " +
				"that were retried on it without the prefill pod, by that status.",
		}, []string{"code"}),
	}
	for _, c := range prefillFallbackStatuses {
		m.pdFallbacks.WithLabelValues(strconv.Itoa(c))
	}
	for _, b := range []string{bodyStream, bodyJSON} {
		m.truncated.WithLabelValues(b)
	}
	for _, c := range noRouteCodes {
		m.noRoute.WithLabelValues(strconv.Itoa(c))
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.retries, m.truncated, m.noRoute, m.pdFallbacks} {
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

// noRouteCodes are the statuses of the no-route metric, its only label values.
var noRouteCodes = [...]int{http.StatusNotFound, http.StatusMethodNotAllowed}

// unrouted counts a request refused for want of a route, with status 404 or 405.
func (m *metrics) unrouted(status int) {
	if status != http.StatusMethodNotAllowed {
		status = http.StatusNotFound
	}
	m.noRoute.WithLabelValues(strconv.Itoa(status)).Inc()
}
