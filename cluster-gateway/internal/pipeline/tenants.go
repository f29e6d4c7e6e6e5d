package pipeline

import (
	"net/http"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
)

// admitTenant charges req to its tenant's limits, reserving its prompt estimate plus its output
// bound (max_tokens); it returns the lease, or the 429 refusal.
func (p *Pipeline) admitTenant(req *framework.Request) (*tenantlimits.Lease, error) {
	if p.tenants == nil {
		return nil, nil
	}
	lease, ref := p.tenants.Admit(req.Tenant, int64(req.PromptTokens)+int64(req.MaxTokens))
	if ref == nil {
		return lease, nil
	}
	p.log.Debug("request refused: tenant over its limit", "request", req.ID, "tenant", req.Tenant,
		"limit", ref.Limit, "retry_after", ref.RetryAfter)
	return nil, apierror.RateLimited(ref.Tenant, ref.Limit, ref.RetryAfter)
}

// finishTenant reconciles a finished request's token reservation: an answer from the model
// server (2xx) is charged the tokens it reported or the meter counted; one whose end the gateway
// did not see (the client gone, or Envoy not sending the response to ext_proc) stays charged
// its reservation; one no model server answered well (a failure, an error status) is charged
// nothing.
func finishTenant(d *Decision, status int, err error, m Measurement) {
	switch {
	case d.lease == nil:
	case status >= http.StatusOK && status < http.StatusMultipleChoices:
		prompt := m.PromptTokens
		if prompt < 0 {
			prompt = d.Request.PromptTokens
		}
		d.lease.Finish(int64(prompt) + int64(m.OutputTokens))
	case status == 0 && err == nil:
		d.lease.Finish(-1)
	default:
		d.lease.Refund()
	}
}
