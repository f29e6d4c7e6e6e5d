package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// copyBufs holds the buffers answers are streamed through (32 KiB each).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

func getCopyBuf() *[]byte {
	if !pooling {
		return copyBufs.New().(*[]byte)
	}
	return copyBufs.Get().(*[]byte)
}

func putCopyBuf(b *[]byte) {
	if pooling {
		copyBufs.Put(b)
	}
}

// serveInference handles POST /v1/completions, /v1/chat/completions, /v1/embeddings and
// /v1/responses.
func (s *Server) serveInference(w http.ResponseWriter, r *http.Request) {
	s.serveBody(w, r, func(r *http.Request, body []byte) (*pipeline.Decision, *apierror.Error) {
		return s.pipe.Decide(r.Context(), body, headerGetter(r.Header), nil)
	})
}

// serveBody reads a request's body whole, has decide route it (with the request as traced) and
// forwards it.
func (s *Server) serveBody(
	w http.ResponseWriter,
	r *http.Request,
	decide func(r *http.Request, body []byte) (*pipeline.Decision, *apierror.Error),
) {
	if t := s.pipe.Tracer(); t.Enabled() {
		var span trace.Span
		r, span = s.startRequest(t, r)
		defer span.End()
	}
	if s.draining.Load() {
		s.errorAnswer(w, r, apierror.Unavailable("the gateway is shutting down", 1))
		return
	}
	buf, apiErr := s.readBody(w, r)
	if apiErr != nil {
		// Answered even when the request's context has ended: a body cut off by its read
		// deadline cancels the context, and the client still deserves to know why.
		s.setServedBy(w.Header(), nil)
		traceError(r, apiErr)
		apiErr.Write(w)
		return
	}
	defer buf.Release() // the body's budget is held until the last attempt ended
	body := buf.Bytes()
	d, apiErr := decide(r, body)
	if apiErr != nil {
		s.errorAnswer(w, r, apiErr)
		return
	}
	defer s.pipe.Done(d) // forward returns after the last attempt ended
	s.forward(w, r, &payload{data: body}, d)
}

// readBody reads the request body within BodyReadTimeout into a buffer that grows as the bytes
// arrive, reserved from the pipeline's body budget, then lifts the read deadline so the answer
// may stream for as long as it needs. A body over the limit is a 413, a spent budget a 503 with
// Retry-After, a body that does not arrive in time a 400 (and the connection is not reused: its
// deadline is kept).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (*body.Buffer, *apierror.Error) {
	rc := http.NewResponseController(w)
	// A ResponseWriter without deadline support (a test recorder, say) reads without a bound.
	bounded := s.cfg.BodyReadTimeout > 0 && rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) == nil
	buf, err := body.Read(r.Body, s.pipe.BodyOptions(r.ContentLength))
	if err == nil {
		if bounded {
			_ = rc.SetReadDeadline(time.Time{})
		}
		return buf, nil
	}
	if e := s.pipe.RefuseBody(pipeline.DoorHTTP, err); e != nil {
		return nil, e
	}
	if bounded && r.Context().Err() != nil {
		// Counted and logged as a slow body, answered 400 as before the ext_proc door had
		// its own deadline (whose answer is a 408).
		late := &pipeline.BodyTimeoutError{Timeout: s.cfg.BodyReadTimeout, Received: -1}
		s.pipe.SlowBody(pipeline.DoorHTTP, late)
		return nil, apierror.BadRequest(late.Error(), "")
	}
	return nil, apierror.BadRequest(err.Error(), "")
}

// forward tries the decision's targets in order, then asks the scheduler again, until one
// answers with something other than a connect failure, 503 or 429, or MaxAttempts is reached.
// A body that streams (payload.once) gets one attempt.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body *payload, d *pipeline.Decision) {
	tried := make(map[string]bool, s.cfg.MaxAttempts)
	res := d.Result
	fellBack := false // a prefill pod failed: the request's later attempts prefill on the decode pod
	for attempt := 1; ; attempt++ {
		ep := nextTarget(res, tried)
		if ep == nil {
			var err error
			if res, err = s.pipe.Reschedule(r.Context(), d); err != nil {
				s.errorAnswer(w, r, s.pipe.Translate(err))
				return
			}
			if ep = nextTarget(res, tried); ep == nil {
				s.errorAnswer(w, r, apierror.Unavailable("every candidate endpoint failed", 1))
				return
			}
		}
		tried[ep.Address] = true
		reason, done := s.try(w, r, body, d, res, ep, fellBack, attempt >= s.cfg.MaxAttempts || body.once())
		if done {
			return
		}
		if reason == retryPrefill { // the same decode pod again, prefilling itself
			delete(tried, ep.Address)
			fellBack = true
		}
		s.metrics.retry(reason)
		s.log.Debug("retrying on another endpoint", "request", d.Request.ID, "endpoint", ep.Address, "reason", reason)
	}
}

// nextTarget is the first target of res not tried yet.
func nextTarget(res *framework.Result, tried map[string]bool) *datastore.Endpoint {
	if res == nil {
		return nil
	}
	for _, t := range res.Targets {
		// The scheduler picks among the store's endpoints.
		if ep, ok := t.(*datastore.Endpoint); ok && !tried[ep.Address] {
			return ep
		}
	}
	return nil
}

// try sends the request to ep, a target of res (d's decision or a rescheduled one), naming res's
// prefill pod to it unless fellBack. It returns done=false with a reason when the attempt failed
// before any byte reached the client and may be retried elsewhere (never when last), or, for
// retryPrefill, on ep without the prefill pod.
func (s *Server) try(
	w http.ResponseWriter,
	r *http.Request,
	body *payload,
	d *pipeline.Decision,
	res *framework.Result,
	ep *datastore.Endpoint,
	fellBack, last bool,
) (string, bool) {
	ctx := r.Context()
	rd, n, ok := body.open()
	if !ok {
		s.errorAnswer(w, r, apierror.Unavailable("the request body was streamed to a model server that did not "+
			"answer, and cannot be sent again", 1))
		return "", true
	}
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ep.Address+r.URL.RequestURI(), rd)
	if err != nil {
		s.errorAnswer(w, r, apierror.BadRequest(err.Error(), ""))
		return "", true
	}
	prefill := prefillOf(res, fellBack)
	prefillAddr := ""
	if prefill != nil {
		prefillAddr = prefill.Address
	}
	out.Header = upstreamHeader(r.Header, d, prefillAddr)
	out.ContentLength = n
	a := s.pipe.Begin(ctx, d, ep)
	if prefill != nil {
		a.UsePrefill(prefill)
	}
	s.pipe.Inject(a, propagation.HeaderCarrier(out.Header))
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		if berr := body.err(); berr != nil {
			// The client's body went bad on its way: not the model server's fault.
			s.pipe.End(ctx, a, 0, nil, true)
			s.errorAnswer(w, r, s.pipe.RefuseForm(pipeline.DoorHTTP, berr))
			return "", true
		}
		if ctx.Err() != nil {
			s.pipe.End(ctx, a, 0, nil, true)
			return "", true
		}
		s.pipe.End(ctx, a, 0, err, last)
		if last {
			s.errorAnswer(
				w,
				r,
				&apierror.Error{
					Status:  http.StatusBadGateway,
					Type:    "upstream_error",
					Code:    "upstream_unreachable",
					Message: err.Error(),
				},
			)
			return "", true
		}
		return "connect", false
	}
	if (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) && !last {
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		_ = resp.Body.Close()
		s.pipe.End(ctx, a, resp.StatusCode, nil, false)
		return fmt.Sprint(resp.StatusCode), false
	}
	if prefill != nil && prefillFailed(resp.StatusCode) && !last {
		s.fallBack(a, d, resp, prefillAddr)
		return retryPrefill, false
	}
	s.setPD(w.Header(), res, fellBack)
	s.stream(w, r, resp, a)
	return "", true
}

// stream copies the response to the client, flushing after every chunk so SSE events are not
// buffered, while metering tokens and usage. When the model server's body breaks after the
// headers were sent, the client's answer is aborted (see abortTruncated): it must never end as
// if it were complete.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, resp *http.Response, a *pipeline.Attempt) {
	defer resp.Body.Close()
	copyResponseHeader(w.Header(), resp.Header)
	s.setServedBy(w.Header(), a.Endpoint())
	if ps := a.Decision().Result.PrefixScoring; ps != "" {
		w.Header().Set(contract.HeaderPrefixScoring, ps)
	}
	w.WriteHeader(resp.StatusCode)
	telemetry.StatusCode(trace.SpanFromContext(r.Context()), resp.StatusCode)
	rc := http.NewResponseController(w)
	// The headers leave now, not with the first token: a client (or a global router) sees the
	// answer start, and the time it waits for them is the time Server-Timing reports plus the
	// network, not the prefill behind them.
	start := time.Now()
	_ = rc.Flush()
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	a.Respond(resp.StatusCode, sse)
	a.ClientWrite(time.Since(start)) // a client that does not read holds the pod's answer back
	boundary, upErr := s.copyBody(w, r, rc, resp.Body, a)
	if upErr == nil {
		s.pipe.End(r.Context(), a, resp.StatusCode, nil, true)
		return
	}
	if sse {
		// The pod died or the connection broke mid-stream: tell the client in the stream
		// itself, then abort it, so that it does not mistake a truncated answer for a complete one.
		writeStreamError(w, boundary, "the model server's stream broke after it had started: "+upErr.Error())
		_ = rc.Flush()
	}
	s.pipe.End(r.Context(), a, resp.StatusCode, upErr, true)
	s.abortTruncated(a, sse, upErr)
}

// copyBody copies body to w chunk by chunk, flushing each. It returns whether the bytes sent end
// between two SSE events and the model server's error that broke the body (nil at its end, or
// when the client went away).
func (s *Server) copyBody(
	w http.ResponseWriter,
	r *http.Request,
	rc *http.ResponseController,
	body io.Reader,
	a *pipeline.Attempt,
) (bool, error) {
	bp := getCopyBuf()
	defer putCopyBuf(bp)
	buf := *bp
	boundary := true // the bytes sent so far end between two SSE events
	for {
		n, err := body.Read(buf)
		if n > 0 {
			now := time.Now()
			s.pipe.Observe(r.Context(), a, buf[:n], now)
			if _, werr := w.Write(buf[:n]); werr != nil {
				return boundary, nil // the client went away; its context cancels the upstream request
			}
			boundary = endsEvent(boundary, buf[:n])
			_ = rc.Flush()
			a.ClientWrite(time.Since(now)) // the time the pod's answer was not read
		}
		if err != nil {
			if errors.Is(err, io.EOF) || r.Context().Err() != nil {
				return boundary, nil
			}
			return boundary, err
		}
	}
}

// abortTruncated counts and logs an answer whose model-server body broke after its headers were
// sent, then aborts the handler: net/http then ends the client's response short (HTTP/1.1: the
// connection is closed before the declared Content-Length or the last chunk; HTTP/2: the
// stream is reset), so the client's read fails instead of seeing a clean end.
func (s *Server) abortTruncated(a *pipeline.Attempt, sse bool, err error) {
	s.metrics.truncate(sse)
	ep := a.Endpoint()
	s.log.Warn("model server body cut short; aborting the answer", "request", a.Decision().Request.ID,
		"endpoint", ep.Name, "address", ep.Address, "stream", sse, "err", err)
	panic(http.ErrAbortHandler)
}

// endsEvent reports whether a stream ends between two SSE events after b, given whether it
// did before b: after a blank line ("\n\n"), or still at the start.
func endsEvent(prev bool, b []byte) bool {
	switch {
	case len(b) == 0:
		return prev
	case b[len(b)-1] != '\n':
		return false
	case len(b) == 1:
		return prev // a lone newline: only the start of a stream is known to be a boundary
	}
	return b[len(b)-2] == '\n'
}

// writeStreamError ends a broken SSE stream with an OpenAI-style error event (and no [DONE]),
// first closing an event left half-written.
func writeStreamError(w io.Writer, boundary bool, msg string) {
	if !boundary {
		_, _ = io.WriteString(w, "\n\n")
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "upstream_error", "code": http.StatusBadGateway}})
	_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
}
