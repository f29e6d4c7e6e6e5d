package pipeline

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// maxCodes caps the distinct values of the code label: a pod may answer any three-digit status.
const maxCodes = 64

// Metrics are the request metrics shared by both front doors. Their model label takes only
// names that resolved to a model some pod serves (or the adapter map names), at most
// promlabel.DefaultLimit of them; every other name (unknown, malformed, past the cap) is
// counted as promlabel.Other, so a client cannot grow the series by inventing names.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	models   *promlabel.Set
	codes    *promlabel.Set
	// invalid counts requests refused for a header flow control cannot accept.
	invalid *prometheus.CounterVec
	// bodyRefused counts request bodies refused by front door and reason.
	bodyRefused *prometheus.CounterVec
	// slo counts the requests with latency objectives by outcome (goodput at SLO).
	slo *sloMetrics
	// unmetered counts responses whose usage was not read, by reason.
	unmetered *prometheus.CounterVec
	// clientStalled counts attempts whose client held the answer back (latencies not learned).
	clientStalled prometheus.Counter
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
		models: promlabel.NewSet(promlabel.DefaultLimit),
		codes:  promlabel.NewSet(maxCodes),
		bodyRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_request_body_refused_total",
			Help: "Request bodies refused, by front door (http, ext_proc) and reason: too_large (over --max-body-bytes, 413), " +
				"budget (the in-flight body budget --max-inflight-body-bytes was spent, 503), timeout (the body did not arrive " +
				"in time: 400 on the HTTP proxy, 408 on ext_proc) or malformed_form (a pass-through path's multipart body " +
				"malformed, without a model field or with two, 400).",
		}, []string{"door", "reason"}),
	}
	for _, door := range []string{DoorHTTP, DoorExtProc} {
		for _, reason := range []string{bodyTooLarge, bodyBudget, bodyTimeout, bodyForm} {
			m.bodyRefused.WithLabelValues(door, reason)
		}
	}
	m.invalid = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_gateway_invalid_header_requests_total",
		Help: "Requests refused with 400 for a header the gateway cannot accept (a priority outside " +
			"--min-priority..--max-priority or not an integer, a bad hand-back offer, a latency objective that is not " +
			"milliseconds above 0 and at most an hour), by header.",
	}, []string{"header"})
	for _, h := range []string{contract.HeaderPriority, contract.HeaderHandBack, contract.HeaderSLOTTFT,
		contract.HeaderSLOTPOT} {
		m.invalid.WithLabelValues(h)
	}
	m.unmetered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_gateway_response_unmetered_total",
		Help: "Responses passed on without reading their usage, by reason: too_large (a JSON body or an SSE line over 1 " +
			"MiB) or budget (the in-flight body budget --max-inflight-body-bytes, which the buffered response is charged to, " +
			"was spent).",
	}, []string{"reason"})
	for _, reason := range usagemeter.Reasons {
		m.unmetered.WithLabelValues(reason)
	}
	m.clientStalled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchyard_gateway_client_stalled_total",
		Help: "Answers (attempts) whose client held them back: the HTTP proxy waited on it to accept what it wrote " +
			"for more than a tenth of the attempt, so the measured time to first token and inter-token latency were the " +
			"client's pace; they are not learned as the pod's speed.",
	})
	m.slo = newSLOMetrics()
	if reg != nil {
		for _, c := range []prometheus.Collector{
			m.requests, m.duration, m.ttft, m.invalid, m.bodyRefused, m.slo.requests, m.unmetered, m.clientStalled,
		} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *Metrics) observe(d *Decision, status int, now time.Time, meas Measurement) {
	model := m.model(d.Request)
	m.requests.WithLabelValues(model, m.codes.Value(strconv.Itoa(status))).Inc()
	m.duration.WithLabelValues(model).Observe(now.Sub(d.Started).Seconds())
	if meas.TTFT > 0 {
		m.ttft.WithLabelValues(model).Observe(meas.TTFT.Seconds())
	}
}

// rejected counts a request answered status before it reached a pod.
func (m *Metrics) rejected(req *framework.Request, status int) {
	m.requests.WithLabelValues(m.model(req), m.codes.Value(strconv.Itoa(status))).Inc()
}

// model is req's model label: its name when it resolved to a served model (BaseModel is set
// only then) and the label has room, else promlabel.Other.
func (m *Metrics) model(req *framework.Request) string {
	if req.BaseModel == "" {
		return promlabel.Other
	}
	return m.models.Value(req.Model)
}

// invalidHeader counts a request refused for header (one of flow control's header names).
func (m *Metrics) invalidHeader(header string) { m.invalid.WithLabelValues(header).Inc() }

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
