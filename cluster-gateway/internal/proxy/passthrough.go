package proxy

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
)

// payload is the body of a request the proxy forwards, for each attempt: a body held whole
// (data), or a multipart body whose rest streams from the client (form).
type payload struct {
	data []byte
	form *openai.Form
	// declared is the form request's Content-Length (-1 when unknown), sent on.
	declared int64
	// onEnd is called once the form's rest has been read whole (it lifts the body deadline).
	onEnd func()
}

// open returns a reader of the body for one attempt and its length (-1 when unknown); ok is
// false when the body cannot be sent again (a streamed form an attempt read from).
func (p *payload) open() (r io.Reader, n int64, ok bool) {
	if p.form == nil {
		return bytes.NewReader(p.data), int64(len(p.data)), true
	}
	r, ok = p.form.Open()
	if !ok {
		return nil, 0, false
	}
	if p.form.Complete() {
		return r, int64(len(p.form.Head())), true
	}
	return &endReader{r: r, end: p.onEnd}, p.declared, true
}

// once reports whether the body can be sent only once: a form whose rest streams. Its first
// attempt is its last, so a refusal (503, 429) is passed on instead of retried elsewhere.
func (p *payload) once() bool { return p.form != nil && !p.form.Complete() }

// err is the error of a streamed form's rest, nil for none.
func (p *payload) err() error {
	if p.form == nil {
		return nil
	}
	return p.form.Err()
}

// endReader calls end once, when r has been read to its end.
type endReader struct {
	r    io.Reader
	end  func()
	once sync.Once
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.end != nil {
		e.once.Do(e.end)
	}
	return n, err
}

// servePassthrough handles POST on a pass-through path whose model is in a JSON body: read as
// the inference paths' bodies are, scheduled on the model alone.
func (s *Server) servePassthrough(w http.ResponseWriter, r *http.Request) {
	s.serveBody(w, r, func(r *http.Request, body []byte) (*pipeline.Decision, *apierror.Error) {
		return s.pipe.DecidePassthrough(r.Context(), body, "", headerGetter(r.Header))
	})
}

// serveForm handles POST on a pass-through path whose model is a multipart/form-data field (an
// audio transcription): the body is read until its model field is known (openai.ReadForm, from
// the body budget, within the body deadline), the request is scheduled on that model, and the
// rest of the body streams to the model server, checked as it passes. A body whose rest turns
// out bad (over the limit, a second model field, no closing boundary) fails the attempt, and
// the client gets the 400 or 413 it would have had, had the error come first.
func (s *Server) serveForm(w http.ResponseWriter, r *http.Request) {
	if t := s.pipe.Tracer(); t.Enabled() {
		var span trace.Span
		r, span = s.startRequest(t, r)
		defer span.End()
	}
	if s.draining.Load() {
		s.errorAnswer(w, r, apierror.Unavailable("the gateway is shutting down", 1))
		return
	}
	rc := http.NewResponseController(w)
	bounded := s.cfg.BodyReadTimeout > 0 && rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) == nil
	lift := func() {
		if bounded {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}
	form, err := openai.ReadForm(r.Body, r.Header.Get("Content-Type"), s.pipe.BodyOptions(r.ContentLength))
	if err != nil {
		s.refuseForm(w, r, bounded, err)
		return
	}
	defer form.Release() // the head's budget is held until the last attempt ended
	if form.Complete() {
		lift()
	}
	d, apiErr := s.pipe.DecidePassthrough(r.Context(), nil, form.Model, headerGetter(r.Header))
	if apiErr != nil {
		s.errorAnswer(w, r, apiErr)
		return
	}
	defer s.pipe.Done(d)
	s.forward(w, r, &payload{form: form, declared: r.ContentLength, onEnd: lift}, d)
}

// refuseForm answers a multipart body refused while it was read, counted and logged by the
// pipeline; a body cut off by its read deadline is counted as slow and answered 400, as on the
// inference paths.
func (s *Server) refuseForm(w http.ResponseWriter, r *http.Request, bounded bool, err error) {
	var apiErr *apierror.Error
	if bounded && r.Context().Err() != nil {
		late := &pipeline.BodyTimeoutError{Timeout: s.cfg.BodyReadTimeout, Received: -1}
		s.pipe.SlowBody(pipeline.DoorHTTP, late)
		apiErr = apierror.BadRequest(late.Error(), "")
	} else {
		apiErr = s.pipe.RefuseForm(pipeline.DoorHTTP, err)
	}
	s.setServedBy(w.Header(), nil)
	traceError(r, apiErr)
	apiErr.Write(w)
}
