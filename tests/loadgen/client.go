package loadgen

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
	"strconv"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/loadgen/sse"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Response headers that say where a request was served.
const (
	HeaderEndpoint = "x-switchyard-endpoint"
	HeaderCluster  = "x-switchyard-cluster"
	HeaderRegion   = "x-switchyard-region"
	HeaderRoute    = "x-switchyard-route"
)

// NewHTTPClient returns the client loadgen uses by default: one shared HTTP/1.1 transport with
// keep-alives and many idle connections per host, no proxy and no compression (SSE must not be
// buffered).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
}

// requestBody is the OpenAI request; Messages or Prompt is set.
type requestBody struct {
	Model         string         `json:"model"`
	Messages      []message      `json:"messages,omitempty"`
	Prompt        string         `json:"prompt,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
	User          string         `json:"user,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// EncodeRequest builds the JSON body loadgen sends for r (to the chat API unless r.Endpoint is
// workload.Completions); stream asks for SSE with usage, ignoreEOS for exactly max_tokens tokens; r.Session
// is sent as the body's user.
func EncodeRequest(r *workload.Request, stream, ignoreEOS bool) ([]byte, error) {
	b := requestBody{Model: r.Model, MaxTokens: r.MaxTokens, Stream: stream, IgnoreEOS: ignoreEOS, User: r.Session}
	if stream {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if r.Endpoint == workload.Completions {
		b.Prompt = r.Text()
	} else {
		if r.System != "" {
			b.Messages = append(b.Messages, message{Role: "system", Content: r.System})
		}
		b.Messages = append(b.Messages, message{Role: "user", Content: r.Prompt})
	}
	return json.Marshal(b)
}

// exchange sends one request and measures it.
type exchange struct {
	client *http.Client
	url    string
	body   []byte
	stream bool
	header http.Header // added to the request (an SLO class's headers), nil for none
}

// SLOHeaders returns the request headers of each class: x-slo-ttft-ms and x-slo-tpot-ms in
// milliseconds, x-gateway-inference-objective and x-switchyard-priority, each when set.
func SLOHeaders(classes []workload.SLOClass) []http.Header {
	out := make([]http.Header, len(classes))
	msec := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
	}
	for i, c := range classes {
		h := http.Header{}
		if c.TTFT > 0 {
			h.Set(contract.HeaderSLOTTFT, msec(c.TTFT))
		}
		if c.TPOT > 0 {
			h.Set(contract.HeaderSLOTPOT, msec(c.TPOT))
		}
		if c.Objective != "" {
			h.Set(contract.HeaderObjective, c.Objective)
		}
		if c.Priority != nil {
			h.Set(contract.HeaderPriority, strconv.Itoa(*c.Priority))
		}
		out[i] = h
	}
	return out
}

// do sends the request and fills s (whose Index, Region, Model and times are set by the caller).
func (x *exchange) do(ctx context.Context, s *Sample) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, bytes.NewReader(x.body))
	if err != nil {
		s.fail(ErrTransport, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range x.header {
		req.Header[k] = v
	}
	if x.stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	start := time.Now()
	defer func() { s.E2E = time.Since(start) }()
	resp, err := x.client.Do(req)
	if err != nil {
		s.fail(classify(ctx, ErrTransport), err.Error())
		return
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	s.Endpoint, s.Cluster = resp.Header.Get(HeaderEndpoint), resp.Header.Get(HeaderCluster)
	s.ServedRegion, s.Route = resp.Header.Get(HeaderRegion), resp.Header.Get(HeaderRoute)
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		s.fail(statusKind(resp.StatusCode), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg)))
		return
	}
	if x.stream {
		readStream(ctx, resp.Body, start, s)
		// Read the end of the chunked body so the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	} else {
		readWhole(ctx, resp.Body, start, s)
	}
	if s.OK() && s.OutputTokens == 0 {
		s.fail(ErrEmpty, "no generated tokens")
	}
}

// readStream reads SSE events, timing every content event.
func readStream(ctx context.Context, body io.Reader, start time.Time, s *Sample) {
	st := streamTimer{s: s, last: start}
	rd := sse.NewReader(body)
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("stream ended without [DONE]")
			}
			s.fail(classify(ctx, ErrStream), err.Error())
			return
		}
		if st.event(ev, time.Now()) {
			return
		}
	}
}

// streamTimer turns the events of one stream into a sample.
type streamTimer struct {
	s      *Sample
	last   time.Time // the request's start, then the last content event
	events int       // content events so far
	dec    sse.ChunkDecoder
}

// event applies one event received at now and reports whether the stream is over.
func (st *streamTimer) event(ev sse.Event, now time.Time) (over bool) {
	s := st.s
	c, err := st.dec.Decode(ev.Data)
	switch {
	case ev.Name == "error":
		s.fail(ErrSSE, string(truncate(ev.Data)))
	case err != nil:
		s.fail(ErrStream, err.Error())
	case c.Err != nil:
		s.fail(ErrSSE, c.Err.Error())
	case c.Done && st.events == 0:
		s.fail(ErrEmpty, "stream ended without a generated token")
	case c.Done:
		if s.OutputTokens == 0 {
			s.OutputTokens = st.events
		}
	default:
		s.addUsage(c.Usage)
		if c.ContentBytes > 0 {
			if st.events == 0 {
				s.TTFT = now.Sub(st.last)
			} else {
				s.ITLs = append(s.ITLs, now.Sub(st.last))
			}
			st.last = now
			st.events++
		}
		return false
	}
	return true
}

// readWhole reads a non-streamed response; its TTFT is the time to the whole body.
func readWhole(ctx context.Context, body io.Reader, start time.Time, s *Sample) {
	data, err := io.ReadAll(io.LimitReader(body, sse.MaxEventBytes))
	if err != nil {
		s.fail(classify(ctx, ErrStream), err.Error())
		return
	}
	c, err := sse.ParseChunk(data)
	switch {
	case err != nil:
		s.fail(ErrStream, err.Error())
	case c.Err != nil:
		s.fail(ErrSSE, c.Err.Error())
	case c.ContentBytes > 0:
		s.TTFT = time.Since(start)
		s.addUsage(c.Usage)
		if s.OutputTokens == 0 {
			s.OutputTokens = 1
		}
	}
}

func (s *Sample) addUsage(u *sse.Usage) {
	if u == nil {
		return
	}
	if u.PromptTokens > 0 {
		s.PromptTokens = u.PromptTokens
	}
	s.CachedTokens = u.CachedTokens
	s.OutputTokens = u.CompletionTokens
}

func (s *Sample) fail(kind ErrorKind, msg string) {
	s.Error, s.ErrorMessage, s.TTFT, s.ITLs = kind, msg, 0, nil
}

// errRequestTimeout is the cause of a request context that outlived Config.RequestTimeout.
var errRequestTimeout = errors.New("loadgen: request timeout")

// classify turns an I/O failure into timeout or canceled when the context explains it.
func classify(ctx context.Context, otherwise ErrorKind) ErrorKind {
	switch {
	case errors.Is(context.Cause(ctx), errRequestTimeout):
		return ErrTimeout
	case ctx.Err() != nil:
		return ErrCanceled
	}
	return otherwise
}

func statusKind(code int) ErrorKind {
	switch {
	case code == http.StatusTooManyRequests:
		return ErrHTTP429
	case code >= 500:
		return ErrHTTP5xx
	}
	return ErrHTTP4xx
}

func truncate(b []byte) []byte {
	if len(b) > 512 {
		return b[:512]
	}
	return b
}
