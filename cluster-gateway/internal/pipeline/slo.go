package pipeline

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// readSLO reads the request's latency objectives (x-slo-ttft-ms, x-slo-tpot-ms; get as in
// Decide). A value that is not a number of milliseconds above 0 and at most an hour is a
// *flowcontrol.HeaderError (400, counted by header): an objective the client meant to set but
// the gateway cannot read must not be silently dropped, nor a typo turn into "no objective".
func readSLO(get func(string) string) (framework.SLO, error) {
	var slo framework.SLO
	for _, h := range [...]struct {
		name string
		dst  *time.Duration
	}{{contract.HeaderSLOTTFT, &slo.TTFT}, {contract.HeaderSLOTPOT, &slo.TPOT}} {
		v := get(h.name)
		d, err := contract.ParseSLO(v)
		if err != nil {
			return framework.SLO{}, &flowcontrol.HeaderError{Header: h.name, Value: v,
				Want: fmt.Sprintf("milliseconds above 0 and at most %d", contract.MaxSLO.Milliseconds())}
		}
		*h.dst = d
	}
	return slo, nil
}

// Objective label values beside the configured objective names.
const (
	// objectiveNone labels requests that name no objective.
	objectiveNone = "none"
)

// objectiveLabel is the objective label of a request naming obj: obj when it is one of the
// configured objectives (--objective-priorities, a bounded set), objectiveNone when it names none,
// promlabel.Other for any other name: the raw header value never becomes a label.
func (p *Pipeline) objectiveLabel(obj string) string {
	if obj == "" {
		return objectiveNone
	}
	if _, ok := p.classify.ObjectivePriorities[obj]; ok {
		return obj
	}
	return promlabel.Other
}

// SLO outcome label values of switchyard_gateway_slo_requests_total.
const (
	sloMet     = "met"
	sloMissed  = "missed"
	sloRefused = "refused"
)

// sloMetrics count the requests with latency objectives by how they fared.
type sloMetrics struct {
	requests *prometheus.CounterVec
}

func newSLOMetrics() *sloMetrics {
	return &sloMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_gateway_slo_requests_total",
		Help: "Requests with a latency objective (x-slo-ttft-ms, x-slo-tpot-ms) by objective (a configured " +
			"--objective-priorities name, none or other), slo (ttft, tpot) and outcome: met or missed, measured on the " +
			"response stream (TTFT from arrival at the gateway, TPOT as the mean gap between tokens after the first), or " +
			"refused before reaching a pod (429 slo_unattainable, flow-control shedding, no endpoint). Goodput at SLO is met " +
			"over the sum.",
	}, []string{"objective", "slo", "outcome"})}
}

// init creates the series of every configured objective, so dashboards see zeros.
func (m *sloMetrics) init(objectives []string) {
	for _, obj := range append(objectives, objectiveNone, promlabel.Other) {
		for _, slo := range [...]string{"ttft", "tpot"} {
			for _, out := range [...]string{sloMet, sloMissed, sloRefused} {
				m.requests.WithLabelValues(obj, slo, out)
			}
		}
	}
}

// refused counts a request with objectives refused before it reached a pod.
func (m *sloMetrics) refused(objective string, slo framework.SLO) {
	if slo.TTFT > 0 {
		m.requests.WithLabelValues(objective, "ttft", sloRefused).Inc()
	}
	if slo.TPOT > 0 {
		m.requests.WithLabelValues(objective, "tpot", sloRefused).Inc()
	}
}

// finished counts a request with objectives that got an answer from a pod: ttft is from its
// arrival to its first token (0: none came), status the final status (0 for none), meas what the
// meter saw. A failed answer misses both objectives. The TPOT objective is judged only on
// answers with two token events or more (a streamed answer): a JSON answer, or one token, shows no
// gap between tokens to judge.
func (m *sloMetrics) finished(objective string, slo framework.SLO, status int, ttft time.Duration, meas Measurement) {
	ok := status >= http.StatusOK && status < http.StatusMultipleChoices && meas.TTFT > 0
	if slo.TTFT > 0 {
		m.requests.WithLabelValues(objective, "ttft", outcome(ok && ttft <= slo.TTFT)).Inc()
	}
	if slo.TPOT > 0 && (!ok || meas.MeanITL > 0) {
		m.requests.WithLabelValues(objective, "tpot", outcome(ok && meas.MeanITL <= slo.TPOT)).Inc()
	}
}

func outcome(met bool) string {
	if met {
		return sloMet
	}
	return sloMissed
}
