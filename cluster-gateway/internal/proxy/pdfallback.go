package proxy

import (
	"io"
	"net/http"
	"strconv"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
)

// PDPrefillFailed is the x-switchyard-pd value of a request whose prefill pod failed: the decode
// pod's sidecar answered 5xx for it, and the gateway retried the decode pod without a prefill
// pod, so it prefilled the prompt itself.
const PDPrefillFailed = "prefill-failed"

// retryPrefill is the retry reason of a prefill failure (switchyard_gateway_retries_total).
const retryPrefill = "prefill"

// prefillFallbackStatuses are the decode pod's answers to a split request that mean its remote
// prefill failed: llm-d's routing sidecar relays the prefill pod's 5xx, and answers 502 when it
// cannot reach it (modelsim answers 502 PrefillError for both). 503 and 429 keep their usual
// retry on another pod: they are also how a saturated decode pod refuses. The statuses are the
// label values of switchyard_gateway_pd_fallbacks_total.
var prefillFallbackStatuses = [...]int{
	http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout,
}

// prefillFailed reports whether status, from the decode pod of a split attempt, is a failure of
// its remote prefill.
func prefillFailed(status int) bool {
	for _, s := range prefillFallbackStatuses {
		if status == s {
			return true
		}
	}
	return false
}

// prefillOf is the prefill pod of res the next attempt names to its decode pod, nil when it has
// none or an earlier attempt's prefill failed (fellBack).
func prefillOf(res *framework.Result, fellBack bool) *datastore.Endpoint {
	if fellBack {
		return nil
	}
	return pipeline.PrefillEndpoint(res)
}

// fallBack ends attempt a, whose decode pod answered resp for its failed remote prefill: the
// failure counts against the prefill pod's passive health and in the fallbacks metric, and the
// caller retries the decode pod with no prefill pod.
func (s *Server) fallBack(a *pipeline.Attempt, d *pipeline.Decision, resp *http.Response, prefill string) {
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	_ = resp.Body.Close()
	a.PrefillFailed()
	s.pipe.End(a.Context(), a, resp.StatusCode, nil, false)
	s.metrics.pdFallback(resp.StatusCode)
	s.log.Warn("remote prefill failed: retrying the decode pod without it", "request", d.Request.ID,
		"decode", a.Endpoint().Address, "prefill", prefill, "status", resp.StatusCode)
}

// pdFallback counts a prefill failure answered status.
func (m *metrics) pdFallback(status int) { m.pdFallbacks.WithLabelValues(strconv.Itoa(status)).Inc() }
