package pipeline

import (
	"context"
	"errors"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// maxLoggedValue bounds the part of a refused header value that is logged.
const maxLoggedValue = 64

// badHeader logs and counts a request refused for a header flow control cannot accept, and
// returns its 400, naming the header.
func (p *Pipeline) badHeader(req *framework.Request, err error) *apierror.Error {
	var he *flowcontrol.HeaderError
	if !errors.As(err, &he) {
		return apierror.BadRequest(err.Error(), "")
	}
	p.metrics.invalidHeader(he.Header)
	value := he.Value
	if len(value) > maxLoggedValue {
		value = value[:maxLoggedValue] + "..."
	}
	p.log.Info("request refused: invalid header", "request", req.ID, "header", he.Header, "value", value, "want", he.Want)
	return apierror.BadRequest(err.Error(), he.Header)
}

// reject translates err for the client and counts it.
func (p *Pipeline) reject(req *framework.Request, err error) *apierror.Error {
	e := p.Translate(err)
	p.metrics.rejected(req, e.Status)
	return e
}

// Translate maps an error to the client's answer.
func (p *Pipeline) Translate(err error) *apierror.Error {
	var e *apierror.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, flowcontrol.ErrOverflow):
		return apierror.Overloaded(err.Error(), p.classify.RetryAfterSeconds())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apierror.Error{Status: 499, Type: "cancelled", Code: "client_closed_request", Message: err.Error()}
	}
	if p.mapErr != nil {
		if e := p.mapErr(err); e != nil {
			return e
		}
	}
	return apierror.Unavailable(err.Error(), p.classify.RetryAfterSeconds())
}
