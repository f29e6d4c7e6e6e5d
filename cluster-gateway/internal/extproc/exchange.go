package extproc

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
)

// errDone ends a stream after an immediate response.
var errDone = errors.New("extproc: immediate response sent")

// exchange is the state of one ext_proc stream (one HTTP request). It is used by one goroutine.
// ctx is the stream's context, held for the stream's lifetime only.
type exchange struct {
	s      *Server
	stream extprocv3.ExternalProcessor_ProcessServer
	ctx    context.Context

	headers   map[string]string // request headers, lower-case names
	subset    []string
	hasSubset bool
	decided   bool

	// The request body arrives in chunks, each aliasing the gRPC buffer it was received in
	// (see received). A body that arrives whole (its first chunk is its last) is used where it
	// lies, in whole, its received buffer kept in held; otherwise the chunks are copied into acc
	// as they arrive: a pooled buffer that grows with the bytes received, never sized from the
	// content-length (want) alone. Both are reserved from the pipeline's body budget, shared
	// with the HTTP proxy (heldBytes is held's reservation), until the body is released.
	acc       body.Buffer
	whole     []byte
	held      mem.Buffer
	heldBytes int64
	streaming bool // a body chunk has arrived
	want      int
	size      int
	body      []byte // the whole body, set once the last chunk arrived

	target string // the chosen endpoint as x-switchyard-endpoint shows it (its name)
	// pd and prefillTarget are the prefill/decode decision and the prefill pod as
	// x-switchyard-prefill-endpoint shows it ("" without a pd profile, or no prefill pod).
	pd, prefillTarget string
	decision          *pipeline.Decision // released (Pipeline.Done) when the stream ends
	attempt           *pipeline.Attempt
	status            int
	ended             bool

	// tctx is ctx with the request's gateway.request span (span), once the request is being
	// decided, when tracing is on; span is nil otherwise.
	tctx context.Context
	span trace.Span

	chunk chunkAnswer // every body chunk sent back
	recv  received    // every message received directly (outside the pump)
	pump  *bodyPump   // receives while the request body is due (see bodyPump), else nil
}

// newExchange returns the exchange of one stream. Exchanges are not pooled: reusing them (and
// their header maps) saved no measurable allocation or CPU time (docs/architecture.md#pools).
func newExchange(s *Server, stream extprocv3.ExternalProcessor_ProcessServer) *exchange {
	return &exchange{s: s, stream: stream, ctx: stream.Context()}
}

// run receives messages until the stream ends. A message's received buffer is freed once it
// was handled, unless the exchange kept it for the request body. While the body is due the
// messages come from the pump, and a body late past Config.BodyTimeout ends the exchange with a
// 408.
func (x *exchange) run() error {
	for {
		m, err := x.next()
		if errors.Is(err, errBodyTimeout) {
			err = x.bodyTimedOut()
		} else if status.Code(err) == codes.ResourceExhausted {
			err = x.tooLarge(err)
		} else if errors.Is(err, io.EOF) || errors.Is(err, errStreamDone) || status.Code(err) == codes.Canceled {
			return nil
		}
		if err == nil {
			err = x.handle(m)
			x.handled(m)
		}
		if err != nil {
			if errors.Is(err, errDone) {
				return nil
			}
			return err
		}
	}
}

// next receives the next message: from the pump while there is one, else from the stream.
func (x *exchange) next() (*received, error) {
	p := x.pump
	if p == nil {
		m := &x.recv
		*m = received{}
		return m, x.stream.RecvMsg(m)
	}
	r := p.next(x.ctx.Done())
	if r.last {
		x.pump = nil
		p.release()
	}
	return r.m, r.err
}

// handled frees m's buffer (unless the body kept it) and gives its slot back to the pump.
func (x *exchange) handled(m *received) {
	m.free()
	if x.pump != nil {
		x.pump.handled(m)
	}
}

// bodyTimedOut answers a request whose body did not arrive within Config.BodyTimeout: a 408,
// counted and logged, with the body's budget given back at once.
func (x *exchange) bodyTimedOut() error {
	late := &pipeline.BodyTimeoutError{Timeout: x.s.cfg.BodyTimeout, Received: int64(x.size)}
	x.releaseBody()
	return x.immediate(x.s.pipe.RefuseBody(pipeline.DoorExtProc, late))
}

// tooLarge handles a message gRPC refused for exceeding MaxMessageBytes (recvErr): gRPC has
// already ended the stream with RESOURCE_EXHAUSTED and the sizes (Envoy answers the client as
// its ext_proc filter's failure mode says: 500 unless failure_mode_allow), so the refusal is
// logged, and counted with the body's refusals when the request was not decided yet; the body's
// budget is given back. The connection's other streams carry on.
func (x *exchange) tooLarge(recvErr error) error {
	x.s.log.Info("ext_proc message refused: larger than the limit", "limit_bytes", MaxMessageBytes,
		"decided", x.decided, "received_bytes", x.size, "err", recvErr)
	if !x.decided {
		x.releaseBody()
		_ = x.s.pipe.RefuseBody(pipeline.DoorExtProc, &body.TooLargeError{Limit: MaxMessageBytes})
	}
	return recvErr
}

func (x *exchange) handle(m *received) error {
	req := m.req
	switch v := req.Request.(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.requestHeaders(req, v.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.requestBody(m, v.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return x.requestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return x.responseHeaders(v.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return x.responseBody(v.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		x.finish()
		return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{}}})
	}
	return nil
}

// requestHeaders stores the headers and the subset hint. The answer waits for the body.
func (x *exchange) requestHeaders(req *extprocv3.ProcessingRequest, h *extprocv3.HttpHeaders) error {
	if x.headers == nil {
		x.headers = make(map[string]string, len(h.GetHeaders().GetHeaders()))
	}
	for _, hv := range h.GetHeaders().GetHeaders() {
		v := string(hv.GetRawValue())
		if v == "" {
			v = hv.GetValue()
		}
		x.headers[strings.ToLower(hv.GetKey())] = v
	}
	x.subset, x.hasSubset = subsetHint(req)
	if n := contentLength(x.headers["content-length"]); n > 0 {
		if n > x.s.cfg.MaxBodyBytes {
			return x.immediate(apierror.TooLarge(int64(x.s.cfg.MaxBodyBytes)))
		}
		x.want = n
	}
	if h.GetEndOfStream() {
		return x.noBody()
	}
	if x.pump == nil && !x.decided {
		x.pump = startPump(x.stream, x.s.cfg.BodyTimeout) // the body is due from now
	}
	return nil
}

// contentLength parses a content-length value; it is 0 when absent or invalid (without
// strconv's error, an allocation, for the usual absent header).
func contentLength(v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// requestBody accumulates body chunks and decides on the last one.
func (x *exchange) requestBody(m *received, b *extprocv3.HttpBody) error {
	if x.decided {
		return nil
	}
	chunk := b.GetBody()
	if x.size+len(chunk) > x.s.cfg.MaxBodyBytes {
		return x.immediate(x.s.pipe.RefuseBody(pipeline.DoorExtProc, &body.TooLargeError{Limit: int64(x.s.cfg.MaxBodyBytes)}))
	}
	x.size += len(chunk)
	if err := x.addChunk(m, chunk, b.GetEndOfStream()); err != nil {
		if e := x.s.pipe.RefuseBody(pipeline.DoorExtProc, err); e != nil {
			return x.immediate(e)
		}
		return err
	}
	if !b.GetEndOfStream() {
		return nil
	}
	return x.decide(true)
}

// addChunk adds a body chunk: a first chunk that is also the last is kept where it lies (its
// received buffer taken from m), any other is copied into acc. Either is reserved from the body
// budget first; a *body.BudgetError says it did not fit.
func (x *exchange) addChunk(m *received, chunk []byte, last bool) error {
	first := !x.streaming
	x.streaming = true
	if first && last {
		n := int64(len(chunk))
		if m.buf != nil {
			n = int64(m.buf.Len()) // the whole received message stays in memory
		}
		if err := x.s.pipe.BodyBudget().Reserve(n); err != nil {
			return err
		}
		x.whole, x.heldBytes = chunk, n
		if m.buf != nil {
			x.held = m.keep()
		}
		return nil
	}
	if first {
		x.acc.Reset(body.Options{Limit: int64(x.s.cfg.MaxBodyBytes), Declared: int64(x.want),
			Budget: x.s.pipe.BodyBudget(), Pool: x.s.pool})
	}
	return x.acc.Append(chunk)
}

// assemble sets x.body from the chunks received.
func (x *exchange) assemble() {
	if x.whole != nil {
		x.body = x.whole
		return
	}
	x.body = x.acc.Bytes()
}

// releaseBody drops the body once it was sent back (or the stream ended first) and gives back
// its budget; Send marshals synchronously, and nothing else keeps a reference, so pooled buffers
// can be reused at once.
func (x *exchange) releaseBody() {
	x.acc.Release()
	if x.held != nil {
		x.held.Free()
		x.held = nil
	}
	x.s.pipe.BodyBudget().Release(x.heldBytes)
	x.heldBytes = 0
	x.body, x.whole = nil, nil
}

// requestTrailers ends a body that was not marked end_of_stream, then acknowledges the trailers.
func (x *exchange) requestTrailers() error {
	if !x.decided {
		if err := x.decide(false); err != nil {
			return err
		}
	}
	return x.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
		RequestTrailers: &extprocv3.TrailersResponse{}}})
}

// decide schedules the request and sends the request-headers answer followed by the body.
func (x *exchange) decide(eos bool) error {
	x.decided = true
	x.assemble()
	defer x.releaseBody()
	if x.hasSubset && len(x.subset) == 0 {
		return x.immediate(apierror.Unavailable("the subset hint lists no endpoint", 1))
	}
	var subset []string
	if x.hasSubset {
		subset = x.subset
	}
	ctx := x.startSpan()
	d, apiErr := x.s.pipe.Decide(ctx, x.body, x.get, subset)
	if apiErr != nil {
		return x.immediate(apiErr)
	}
	x.decision = d
	targets := restrict(d.Result.Targets, subset)
	if len(targets) == 0 {
		return x.immediate(apierror.Unavailable("no endpoint in the subset hint is usable", 1))
	}
	ep, _ := targets[0].(*datastore.Endpoint) // the scheduler picks among the store's endpoints
	x.target = pipeline.EndpointHeaderValue(ep, x.s.cfg.EndpointHeaderAddress)
	x.pd = d.Result.Disaggregation
	if p := pipeline.PrefillEndpoint(d.Result); p != nil {
		x.prefillTarget = pipeline.EndpointHeaderValue(p, x.s.cfg.EndpointHeaderAddress)
	}
	x.attempt = x.s.pipe.Begin(ctx, d, ep)
	if err := x.send(x.requestHeadersResponse(newDecisionAnswer(), d, targets)); err != nil {
		return err
	}
	return x.sendBody(x.body, eos)
}

// responseHeaders notes the status and content type and tags the response.
func (x *exchange) responseHeaders(h *extprocv3.HttpHeaders) error {
	sse := false
	for _, hv := range h.GetHeaders().GetHeaders() {
		v := string(hv.GetRawValue())
		if v == "" {
			v = hv.GetValue()
		}
		switch strings.ToLower(hv.GetKey()) {
		case ":status":
			x.status, _ = strconv.Atoi(v)
		case "content-type":
			sse = strings.HasPrefix(v, "text/event-stream")
		}
	}
	if x.attempt != nil {
		x.attempt.Respond(x.status, sse)
	}
	resp := x.responseHeadersResponse()
	if h.GetEndOfStream() {
		x.finish()
	}
	return x.send(resp)
}

// responseBody meters a response chunk and passes it back unchanged.
func (x *exchange) responseBody(b *extprocv3.HttpBody) error {
	if x.attempt != nil {
		x.s.pipe.Observe(x.ctx, x.attempt, b.GetBody(), time.Now())
	}
	if b.GetEndOfStream() {
		x.finish()
	}
	return x.send(x.chunk.set(false, b.GetBody(), b.GetEndOfStream()))
}

// finish ends the attempt once: in-flight count, passive health, PostResponse hooks. A stream
// that ends without response headers (Envoy configured to skip response processing, or the
// client gone) reports status 0 without blaming the pod.
func (x *exchange) finish() {
	if x.attempt == nil || x.ended {
		return
	}
	x.ended = true
	x.s.pipe.End(x.ctx, x.attempt, x.status, nil, true)
}

// close ends the exchange when its stream ends: the attempt (if the response did not finish
// it), then the request body and the decision's pooled prefix hashes, which the attempt's
// hooks read until then.
func (x *exchange) close() {
	if x.pump != nil {
		x.pump.release() // still receiving: dropped, its deadline stopped
		x.pump = nil
	}
	x.finish()
	x.releaseBody()
	x.s.pipe.Done(x.decision)
	x.decision = nil
	x.endSpan()
}

// immediate answers the client directly and ends the stream.
func (x *exchange) immediate(e *apierror.Error) error {
	x.traceError(e)
	if err := x.send(immediateResponse(e, x.s.cfg)); err != nil {
		return err
	}
	return errDone
}

func (x *exchange) send(r *extprocv3.ProcessingResponse) error {
	if err := x.stream.Send(r); err != nil {
		return status.Errorf(codes.Unknown, "extproc: send to envoy: %v", err)
	}
	return nil
}

func (x *exchange) get(name string) string { return x.headers[name] }

// subsetHint reads Envoy's subset hint; ok is false when the key is absent.
func subsetHint(req *extprocv3.ProcessingRequest) (subset []string, ok bool) {
	ns, found := req.GetMetadataContext().GetFilterMetadata()[SubsetNamespace]
	if !found {
		return nil, false
	}
	v, found := ns.GetFields()[contract.HeaderDestinationSubset]
	if !found {
		return nil, false
	}
	for _, e := range v.GetListValue().GetValues() {
		if s := e.GetStringValue(); s != "" {
			subset = append(subset, s)
		}
	}
	return subset, true
}
