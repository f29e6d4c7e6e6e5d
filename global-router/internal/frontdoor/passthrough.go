package frontdoor

import (
	"errors"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// BodyForwarder is a Forwarder that can also send a body streaming from the client (a
// pass-through path's multipart body). *forward.Forwarder implements it.
type BodyForwarder interface {
	ForwardBody(w http.ResponseWriter, r *http.Request, body forward.Body, targets []forward.Target,
		again forward.Retarget) error
}

// forward sends body with the forwarder: Forward for a body held whole, ForwardBody otherwise.
func (s *Server) forward(
	w http.ResponseWriter,
	r *http.Request,
	b forward.Body,
	targets []forward.Target,
	again forward.Retarget,
) error {
	if data, ok := b.(forward.Bytes); ok {
		return s.fwd.Forward(w, r, data, targets, again)
	}
	bf, ok := s.fwd.(BodyForwarder)
	if !ok {
		return errors.New("frontdoor: the forwarder cannot stream a request body")
	}
	return bf.ForwardBody(w, r, b, targets, again)
}

// formBody is a multipart body streaming through the router (forward.Body).
type formBody struct {
	form     *openai.Form
	declared int64 // the request's Content-Length, -1 when unknown
}

// Open implements forward.Body.
func (f *formBody) Open() (io.Reader, int64, bool) {
	r, ok := f.form.Open()
	if !ok {
		return nil, 0, false
	}
	if f.form.Complete() {
		return r, int64(len(f.form.Head())), true
	}
	return r, f.declared, true
}

// Once implements forward.Body: a body whose rest streams is sent once.
func (f *formBody) Once() bool { return !f.form.Complete() }

// formFailed answers a request whose streamed body failed it, and reports whether it did: the
// body went bad on its way (the 400 or 413 it would have had, had the error come first), or it
// was sent to a cluster that did not answer and cannot be sent again (502).
func (s *Server) formFailed(w http.ResponseWriter, b forward.Body) (outcome string, done bool) {
	f, ok := b.(*formBody)
	if !ok {
		return "", false
	}
	if err := f.form.Err(); err != nil {
		perr := s.refuseForm(err)
		perr.Write(w)
		return outcomeOf(perr.Status), true
	}
	if _, ok := f.form.Open(); ok {
		return "", false // nothing of the rest was sent: the body can still go elsewhere
	}
	(&openai.Error{Status: http.StatusBadGateway, Type: openai.TypeUpstream,
		Message: "the request body streamed to a cluster that did not answer and cannot be sent again"}).Write(w)
	return outcomeUpstreamFailed, true
}

// outcomeUpstreamFailed is the outcome of a streamed request whose cluster failed it.
const outcomeUpstreamFailed = "upstream_failed"

// serveForm handles a pass-through path whose model is a multipart/form-data field (an audio
// transcription): the body is read until its model field is known (openai.ReadForm, from the
// body budget), the request is routed on that model and the rest of the body streams to the
// cluster, checked as it passes.
func (s *Server) serveForm(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var span trace.Span
	if s.cfg.Tracer.Enabled() {
		r, span = s.startRequest(r)
		defer span.End()
	}
	refuse := func(perr *openai.Error, outcome string) {
		perr.Write(w)
		s.metrics.request("", outcome)
		if span != nil {
			endRequest(span, "", outcome)
		}
	}
	tenant, perr := s.tenantOf(r)
	if perr != nil {
		refuse(perr, outcomeUnauthorized)
		return
	}
	form, err := openai.ReadForm(r.Body, r.Header.Get("Content-Type"),
		body.Options{Limit: s.cfg.MaxBodyBytes, Declared: r.ContentLength, Budget: s.cfg.Bodies})
	if err != nil {
		perr := s.refuseForm(err)
		refuse(perr, outcomeOf(perr.Status))
		return
	}
	defer form.Release() // the head's budget is held until the answer has been forwarded
	sess, perr := s.sessionOf(r, nil)
	if perr != nil {
		refuse(perr, outcomeOf(perr.Status))
		return
	}
	parsed := openai.Body{Model: form.Model}
	s.serveParsed(w, r, start, span, tenant, nil, &formBody{form: form, declared: r.ContentLength}, &parsed, sess)
}

// refuseForm is the answer to a multipart body refused while it was read or streamed: a
// *openai.FormError is a 400 naming the field, an oversized body a 413, a spent budget a 503;
// each is logged at debug level (the budget as readBody warns of it).
func (s *Server) refuseForm(err error) *openai.Error {
	var fe *openai.FormError
	var spent *body.BudgetError
	switch {
	case errors.As(err, &fe):
		s.log.Debug("request body refused", "reason", "malformed_form", "err", err)
		return badRequest("invalid request body: "+fe.Reason, fe.Param)
	case errors.Is(err, body.ErrTooLarge):
		s.log.Debug("request body refused", "reason", "too_large", "limit_bytes", s.cfg.MaxBodyBytes)
		return tooLarge(s.cfg.MaxBodyBytes)
	case errors.As(err, &spent):
		s.warnBudget(spent)
		return bodyBudgetSpent(spent)
	}
	s.log.Debug("request body refused", "reason", "read", "err", err)
	return badRequest(err.Error(), "")
}
