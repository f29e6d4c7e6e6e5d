package proxy

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
)

// Metrics are the request metrics shared by both front doors.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	retries  *prometheus.CounterVec
	// bodyRefused counts request bodies refused by front door and reason.
	bodyRefused *prometheus.CounterVec
}

// NewMetrics creates the request metrics and registers them on reg (nil registers nothing).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_requests_total",
			Help: "Inference requests by model and final HTTP status code.",
		}, []string{"model", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchyard_gateway_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its response, by model.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchyard_gateway_ttft_seconds",
			Help:    "Time from sending a request to a model server until its first token, by model.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"model"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_retries_total",
			Help: "Requests retried on another endpoint before the first response byte, by reason.",
		}, []string{"reason"}),
		bodyRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_request_body_refused_total",
			Help: "Request bodies refused, by front door (http, ext_proc) and reason: too_large (over --max-body-bytes, 413) or budget (the in-flight body budget --max-inflight-body-bytes was spent, 503).",
		}, []string{"door", "reason"}),
	}
	for _, door := range []string{DoorHTTP, DoorExtProc} {
		for _, reason := range []string{bodyTooLarge, bodyBudget} {
			m.bodyRefused.WithLabelValues(door, reason)
		}
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.duration, m.ttft, m.retries, m.bodyRefused} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *Metrics) observe(d *Decision, status int, now time.Time, meas bbr.Measurement) {
	model := d.Request.Model
	m.requests.WithLabelValues(model, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(model).Observe(now.Sub(d.Started).Seconds())
	if meas.TTFT > 0 {
		m.ttft.WithLabelValues(model).Observe(meas.TTFT.Seconds())
	}
}

func (m *Metrics) retry(reason string) { m.retries.WithLabelValues(reason).Inc() }

// RegisterBodyBudget registers the gauges of the in-flight body budget on reg: the bytes
// reserved now and the budget's size.
func RegisterBodyBudget(reg prometheus.Registerer, budget *body.Budget) error {
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_inflight_body_bytes",
			Help: "Bytes of request-body buffers held now by both front doors, reserved from the in-flight body budget.",
		}, func() float64 { return float64(budget.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_inflight_body_budget_bytes",
			Help: "The in-flight request body budget (--max-inflight-body-bytes): beyond it bodies are refused with 503.",
		}, func() float64 { return float64(budget.Limit()) }),
	} {
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
