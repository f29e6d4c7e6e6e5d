// Package forward sends a routed request to a cluster gateway and streams the answer back: pooled
// HTTP/2 connections (h2c inside a cluster network, TLS across regions), server-sent events passed
// through chunk by chunk with no buffering, the client's cancellation propagated, and a retry on
// the next candidate when a cluster refuses before its first byte (connect error, 503, or 429 with
// x-switchyard-overflow) within a retry budget.
package forward

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract"

	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Target is one cluster a request may go to.
type Target struct {
	// Cluster and Region name the target (for headers and observations).
	Cluster, Region string
	// URL is the gateway's base URL (scheme://host:port).
	URL string
	// Route is the x-switchyard-route value when this target answers first time.
	Route string
	// Delay is simulated network latency added before the request is sent (local stack and tests;
	// zero in production).
	Delay time.Duration
	// PromptTokens is the request's estimated prompt length: the prefill work the attempt puts
	// on the cluster. The forwarder only passes it on to its observers (the cluster table weighs
	// the requests it has in flight by it); 0 when unknown.
	PromptTokens int
	// HandBack, when above zero, is sent as x-switchyard-hand-back-ms: the gateway hands the
	// request back (429 with x-switchyard-overflow) when it would queue it or predicts its first
	// token later than this. The cluster's other replicas are then skipped, since they see the
	// same pods (see handedBack).
	HandBack time.Duration
	// Estimate is the router's estimated time to first token on this cluster when it decided,
	// round trip included; 0 when unknown. The forwarder only passes it on to its observers
	// (the metrics compare it with the time to first token measured, see TTFTObserver).
	Estimate time.Duration
}

// Outcome is what happened on one attempt; the cluster table uses it for passive health and RTT.
type Outcome struct {
	Target Target
	// Status is the HTTP status (0 on transport error).
	Status int
	// Err is the transport error, if any.
	Err error
	// TTFB is the time to the response headers, from the moment the attempt began (simulated
	// latency included).
	TTFB time.Duration
	// RTT is the network's part of TTFB: TTFB less the time the gateway reported in its
	// Server-Timing header (see GatewayTime). 0 when the attempt got no answer or the answer
	// reported no gateway time (a gateway behind Envoy, say).
	RTT time.Duration
	// Retried is true when the attempt was refused and the next candidate tried.
	Retried bool
	// Streamed is true when the answer is an accepted event stream (Content-Type
	// text/event-stream): its first body bytes carry the first token, and a FirstTokener
	// observer hears of them.
	Streamed bool
	// Abandoned is true when the attempt ended without an answer because the client went away
	// (during the simulated delay or while waiting for the headers): it says nothing of the
	// cluster's health.
	Abandoned bool
}

// Dispatcher is an Observer that also wants to know when an attempt begins, before anything
// is sent: Dispatched is called once per attempt, and exactly one Observe of that attempt's
// Outcome follows. It must be safe for concurrent use.
type Dispatcher interface {
	Dispatched(t Target)
}

// FirstTokener is an Observer that also wants to know when a streamed answer's first token
// arrives: FirstToken is called exactly once for every Outcome observed with Streamed set, when
// its first body bytes arrive or, if none ever do, when the stream ends. It must be safe for
// concurrent use.
type FirstTokener interface {
	FirstToken(t Target)
}

// TTFTObserver is an Observer that also wants the time to first token of the streams it
// answered: ObserveTTFT is called once per accepted event stream whose first body bytes arrive,
// with the time from the attempt's start (simulated latency included) to those bytes. It must be
// safe for concurrent use.
type TTFTObserver interface {
	ObserveTTFT(t Target, ttft time.Duration)
}

// Truncator is an Observer that also wants to know when an answer breaks after it started:
// Truncated is called once for every answer whose body from the gateway failed after its
// headers had been passed on (the client's answer is then aborted, see ErrTruncated). It must
// be safe for concurrent use.
type Truncator interface {
	Truncated(t Target, err error)
}

// Observer receives every attempt's outcome. It must be safe for concurrent use.
type Observer interface {
	Observe(o Outcome)
}

// Config tunes the forwarder.
type Config struct {
	// MaxAttempts bounds the clusters tried for one request (the retry budget); default 3.
	MaxAttempts int
	// DialTimeout bounds a new connection; default 2 s.
	DialTimeout time.Duration
	// HeaderTimeout bounds the wait for a gateway's response headers; default 5 min (a long queue
	// or a long prefill is legitimate).
	HeaderTimeout time.Duration
	// TLS, when set, is used for https:// gateway URLs (across regions).
	TLS *tls.Config
	// PingInterval is how long a connection may stay silent before the router sends it an HTTP/2
	// PING, and PingTimeout how long it waits for the answer before it closes the connection and
	// fails its requests (those without a first byte are retried elsewhere). This is what finds a
	// partitioned gateway, whose connections stay open but carry nothing: without it a request
	// would wait for HeaderTimeout. A gateway queueing a request still answers pings at once.
	// Defaults 1 s and 1 s.
	PingInterval, PingTimeout time.Duration
	// Tracer records a span per attempt (router.forward) and sends its traceparent to the
	// gateway; nil records none and passes the client's traceparent on as it came.
	Tracer *telemetry.Tracer
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{MaxAttempts: 3, DialTimeout: 2 * time.Second, HeaderTimeout: 5 * time.Minute,
		PingInterval: time.Second, PingTimeout: time.Second}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.MaxAttempts < 1:
		return fmt.Errorf("forward: MaxAttempts %d must be >= 1", c.MaxAttempts)
	case c.DialTimeout <= 0:
		return fmt.Errorf("forward: DialTimeout must be > 0")
	case c.HeaderTimeout <= 0:
		return fmt.Errorf("forward: HeaderTimeout must be > 0")
	case c.PingInterval <= 0 || c.PingTimeout <= 0:
		return fmt.Errorf("forward: PingInterval and PingTimeout must be > 0")
	}
	return nil
}

// Forwarder forwards requests to gateways. It is safe for concurrent use.
type Forwarder struct {
	cfg    Config
	client *http.Client
	obs    Observer
}

// New returns a forwarder whose transport speaks HTTP/2 to every gateway: h2c for http:// URLs
// (prior knowledge, no upgrade round trip) and TLS with ALPN for https:// URLs.
func New(cfg Config, obs Observer) (*Forwarder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       cfg.TLS,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.HeaderTimeout,
		DisableCompression:    true,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	tr.Protocols.SetHTTP2(true)
	tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: cfg.PingInterval, PingTimeout: cfg.PingTimeout}
	return &Forwarder{cfg: cfg, client: &http.Client{Transport: tr}, obs: obs}, nil
}

// Close releases idle connections.
func (f *Forwarder) Close() { f.client.CloseIdleConnections() }

// ErrExhausted is returned when every attempt was refused; the last refusal is wrapped.
var ErrExhausted = errors.New("forward: every candidate refused the request")

// ErrTruncated is returned when an answer had started (its headers and perhaps part of its body
// were written to the client) and the gateway's body then broke: the connection closed short of
// its Content-Length or last chunk, or the stream was reset. The caller must abort the client's
// response (panic(http.ErrAbortHandler)) so that the client does not take the part it got for a
// whole answer.
var ErrTruncated = errors.New("forward: the answer broke after it had started")

// errResent is the error of an attempt whose body could not be sent again: it streamed from the
// client to an earlier attempt.
var errResent = errors.New("the request body streamed to an earlier attempt and cannot be sent again")

// errHandedBack wraps a refusal that answered the attempt's hand-back offer (see handedBack).
var errHandedBack = errors.New("handed back")

// handedBack reports whether a refusal with status answers t's hand-back offer: 429 (with
// x-switchyard-overflow) to an attempt that carried one. A 503 or 502 is no answer to it (a
// replica stopping, say), so the cluster's other replicas are still tried.
func handedBack(t Target, status int) bool {
	return t.HandBack > 0 && status == http.StatusTooManyRequests
}

// Retarget returns the targets for a request to be retried, best first, chosen again from what
// the router knows now; tried are the URLs it has been refused at. It may return nil (nowhere
// else to go).
type Retarget func(tried []string) []Target

// Body is a request body the forwarder sends, attempt by attempt. Implementations need not be
// safe for concurrent use: one attempt runs at a time.
type Body interface {
	// Open returns a reader of the whole body for one attempt and its length (-1 when unknown);
	// ok is false when the body cannot be sent again (an earlier attempt read part of it).
	Open() (r io.Reader, n int64, ok bool)
	// Once reports whether the body can be sent once only (it streams from the client): a
	// refusal (503, 502, overflow 429) is then passed on to the client, not retried elsewhere.
	Once() bool
}

// Bytes is a Body held in memory whole: sent again on every attempt.
type Bytes []byte

// Open implements Body.
func (b Bytes) Open() (io.Reader, int64, bool) { return bytes.NewReader(b), int64(len(b)), true }

// Once implements Body: a body in memory can be resent.
func (Bytes) Once() bool { return false }

// Forward sends r (whose body has been read into body) to targets in order and streams the first
// accepted answer to w. It returns nil once an answer was written (whatever its status), an
// error wrapping ErrTruncated when the answer started and its body then broke (part of it was
// written to w), or an error wrapping ErrExhausted when nothing accepted it, in which case
// nothing was written to w.
//
// With again, the retries are chosen again: after a refused attempt the remaining targets are
// replaced by again's (those not tried yet), so a retry goes where the request is now estimated
// to do best. Targets chosen when the request arrived can be seconds old by then (an attempt
// caught on a cut link is given up after the ping timeout), and every request caught by the
// same fault would otherwise retry at the same fallback. nil again keeps the list.
func (f *Forwarder) Forward(
	w http.ResponseWriter,
	r *http.Request,
	body []byte,
	targets []Target,
	again Retarget,
) error {
	return f.ForwardBody(w, r, Bytes(body), targets, again)
}

// ForwardBody is Forward for a body that may stream from the client (see Body): with Once, the
// first answer is passed on whatever its status, and a failed attempt is retried only while the
// body can be opened again.
func (f *Forwarder) ForwardBody(
	w http.ResponseWriter,
	r *http.Request,
	body Body,
	targets []Target,
	again Retarget,
) error {
	var last error
	skip := "" // a cluster that handed the request back: its replicas see the same pods
	var tried []string
	queue := targets
	for len(queue) > 0 && len(tried) < f.cfg.MaxAttempts {
		t := queue[0]
		queue = queue[1:]
		if t.Cluster == skip || slices.Contains(tried, t.URL) {
			continue
		}
		if len(tried) > 0 {
			t.Route = string(contract.RouteRetry)
		}
		tried = append(tried, t.URL)
		start := time.Now()
		span := f.startAttempt(r, t, len(tried))
		resp, err := f.attempt(r, body, t, start, span)
		if err != nil {
			endAttempt(span, err)
			last = err
			if r.Context().Err() != nil || errors.Is(err, errResent) {
				break // the client went away, or the body cannot be sent again: nothing to retry for
			}
			if errors.Is(err, errHandedBack) {
				skip = t.Cluster
			}
			if again != nil && len(tried) < f.cfg.MaxAttempts {
				queue = again(slices.Clone(tried))
			}
			continue
		}
		err = f.stream(w, r, resp, t, start, span)
		endAttempt(span, err)
		return err
	}
	if last == nil {
		last = errors.New("no candidate")
	}
	return fmt.Errorf("%w: %w", ErrExhausted, last)
}

// attempt sends one request; it returns the response only when it is an answer to pass on.
// start is when the attempt began.
func (f *Forwarder) attempt(
	r *http.Request,
	body Body,
	t Target,
	start time.Time,
	span trace.Span,
) (*http.Response, error) {
	ctx := r.Context()
	f.dispatched(t)
	if t.Delay > 0 {
		if err := sleep(ctx, t.Delay); err != nil {
			f.observe(Outcome{Target: t, Err: err, Retried: true, Abandoned: true})
			return nil, err
		}
	}
	rd, n, ok := body.Open()
	if !ok {
		f.observe(Outcome{Target: t, Err: errResent, Abandoned: true})
		return nil, errResent
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, strings.TrimSuffix(t.URL, "/")+r.URL.RequestURI(), rd)
	if err != nil { // a target URL that cannot be used: the cluster's entry is broken
		f.observe(Outcome{Target: t, Err: err, Retried: true})
		return nil, fmt.Errorf("cluster %s: %w", t.Cluster, err)
	}
	copyRequestHeaders(out.Header, r.Header)
	if t.HandBack > 0 {
		out.Header.Set(contract.HeaderHandBack, contract.FormatHandBack(t.HandBack))
	}
	f.inject(span, out.Header)
	out.ContentLength = n
	resp, err := f.client.Do(out)
	o := Outcome{Target: t, Err: err, TTFB: time.Since(start)}
	if err != nil {
		o.Retried, o.Abandoned = true, ctx.Err() != nil
		f.observe(o)
		return nil, fmt.Errorf("cluster %s: %w", t.Cluster, err)
	}
	o.Status = resp.StatusCode
	o.RTT = networkTime(o.TTFB, resp.Header)
	traceStatus(span, resp.StatusCode)
	if refused(resp) && ctx.Err() == nil && !body.Once() {
		o.Retried = true
		f.observe(o)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if handedBack(t, resp.StatusCode) {
			return nil, fmt.Errorf("%w: cluster %s answered %d", errHandedBack, t.Cluster, resp.StatusCode)
		}
		return nil, fmt.Errorf("cluster %s answered %d", t.Cluster, resp.StatusCode)
	}
	o.Streamed = eventStream(resp)
	f.observe(o)
	return resp, nil
}

// eventStream reports whether an answer is a server-sent event stream.
func eventStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// refused reports whether an answer means "try another cluster": 503, or 429 marked as overflow.
func refused(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return true
	case http.StatusTooManyRequests:
		return contract.IsOverflow(resp.Header)
	}
	return false
}

func (f *Forwarder) observe(o Outcome) {
	if f.obs != nil {
		f.obs.Observe(o)
	}
}

// dispatched tells the observer, if it wants to know, that an attempt to t begins.
func (f *Forwarder) dispatched(t Target) {
	if d, ok := f.obs.(Dispatcher); ok {
		d.Dispatched(t)
	}
}

// firstToken tells the observer, if it wants to know, that t's stream has its first token (or
// ended without one).
func (f *Forwarder) firstToken(t Target) {
	if ft, ok := f.obs.(FirstTokener); ok {
		ft.FirstToken(t)
	}
}

// truncated tells the observer, if it wants to know, that t's answer broke after it started.
func (f *Forwarder) truncated(t Target, err error) {
	if tr, ok := f.obs.(Truncator); ok {
		tr.Truncated(t, err)
	}
}

// observeTTFT tells the observer, if it wants to know, t's time to first token.
func (f *Forwarder) observeTTFT(t Target, ttft time.Duration) {
	if o, ok := f.obs.(TTFTObserver); ok {
		o.ObserveTTFT(t, ttft)
	}
}

// stream copies the response to the client, flushing after every read so SSE events leave as
// they arrive; start is when the attempt began. It returns an error wrapping ErrTruncated when
// the gateway's body broke.
func (f *Forwarder) stream(
	w http.ResponseWriter,
	r *http.Request,
	resp *http.Response,
	t Target,
	start time.Time,
	span trace.Span,
) error {
	defer resp.Body.Close()
	sse := eventStream(resp)
	waiting := sse // for its first token
	defer func() {
		if waiting {
			f.firstToken(t)
		}
	}()
	h := w.Header()
	for k, vs := range resp.Header {
		if !hopByHop(k) {
			h[k] = vs
		}
	}
	h.Set(contract.HeaderRoute, t.Route)
	if h.Get(contract.HeaderCluster) == "" {
		h.Set(contract.HeaderCluster, t.Cluster)
	}
	if h.Get(contract.HeaderRegion) == "" {
		h.Set(contract.HeaderRegion, t.Region)
	}
	w.WriteHeader(resp.StatusCode)
	traceStatus(trace.SpanFromContext(r.Context()), resp.StatusCode) // the request's span
	rc := http.NewResponseController(w)
	_ = rc.Flush() // headers leave at once: the client sees the route before the first token
	bp := getCopyBuf()
	defer putCopyBuf(bp)
	buf := *bp
	boundary := true // the bytes sent so far end between two SSE events
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && waiting {
			waiting = false
			f.firstToken(t)
			ttft := time.Since(start)
			f.observeTTFT(t, ttft)
			traceFirstToken(span, ttft)
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away; its context cancels the upstream request
			}
			boundary = endsEvent(boundary, buf[:n])
			_ = rc.Flush()
		}
		if err != nil {
			// EOF, the client's cancellation, or an answer broken after its first byte: in every
			// case the answer has started and cannot be retried.
			if errors.Is(err, io.EOF) || r.Context().Err() != nil {
				return nil
			}
			// A broken event stream ends with an error event, and the caller aborts the
			// answer, so the client does not mistake a truncated answer for a whole one.
			if sse {
				writeStreamError(w, boundary, "cluster "+t.Cluster+": the stream broke after it had started: "+err.Error())
				_ = rc.Flush()
			}
			f.truncated(t, err)
			return fmt.Errorf("%w: cluster %s: %w", ErrTruncated, t.Cluster, err)
		}
	}
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

// copyRequestHeaders passes the client's headers on, except hop-by-hop headers and the routing
// headers only Switchyard may set (contract.IsReserved: the priority, tenant, objective and
// fairness headers pass, since the gateway's flow control reads them).
func copyRequestHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopByHop(k) || contract.IsReserved(k) || strings.EqualFold(k, "Content-Length") {
			continue
		}
		dst[k] = vs
	}
}

// hopByHopHeaders are connection-level headers that are never forwarded.
var hopByHopHeaders = []string{
	"connection",
	"keep-alive",
	"proxy-connection",
	"te",
	"trailer",
	"transfer-encoding",
	"upgrade",
}

func hopByHop(k string) bool { return oneOfFold(k, hopByHopHeaders) }

// oneOfFold reports whether k equals one of names, ignoring case, without allocating.
func oneOfFold(k string, names []string) bool {
	for _, n := range names {
		if len(k) == len(n) && strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryAfter parses a Retry-After header in seconds (0 when absent or invalid).
func RetryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
