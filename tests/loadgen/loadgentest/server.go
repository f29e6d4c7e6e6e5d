// Package loadgentest provides a small OpenAI-compatible streaming server for tests of loadgen and
// of code that drives it: its timing and its failures are set per test.
package loadgentest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Failure modes of Server.
const (
	Mode500        = "500"         // answer 500
	Mode429        = "429"         // answer 429
	ModeBroken     = "broken"      // cut the connection after two tokens
	ModeSSEError   = "sse-error"   // send an "event: error" after one token
	ModeErrorChunk = "error-chunk" // send an {"error":...} chunk after one token
	ModeGarbage    = "garbage"     // send an undecodable chunk after one token
	ModeEmpty      = "empty"       // stream usage and [DONE] without a token
	ModeNoDone     = "no-done"     // end the stream without [DONE]
)

// Server streams Tokens tokens per answer (capped by max_tokens): the first after TTFT, the next
// ITL apart, then usage (prompt 40 tokens, Cached of them cached) and [DONE]. Set the fields before
// Start; they must not change while it serves.
type Server struct {
	TTFT, ITL time.Duration
	Tokens    int
	Cached    int
	Mode      string
	Headers   map[string]string
	// Gate, when set, holds every request until it is closed.
	Gate chan struct{}

	mu       sync.Mutex
	bodies   map[int]string
	arrivals map[int]time.Time
	inFlight int
	maxIn    int
	conns    int
}

// Start serves on a loopback port until the test ends and returns the base URL.
func (s *Server) Start(t testing.TB) string {
	t.Helper()
	s.bodies, s.arrivals = map[int]string{}, map[int]time.Time{}
	srv := httptest.NewUnstartedServer(s)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// Connections returns how many connections clients opened.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Body returns "model|last message" of the request whose prompt starts "Request <index>.".
func (s *Server) Body(index int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bodies[index]
	return b, ok
}

// Requests returns how many distinct request indexes arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Arrival returns when request index arrived.
func (s *Server) Arrival(index int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrivals[index]
}

// MaxInFlight returns the most requests ever served at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

type body struct {
	Model         string `json:"model"`
	MaxTokens     int    `json:"max_tokens"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Prompt   string `json:"prompt"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

// ServeHTTP answers /v1/completions and /v1/chat/completions alike.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b body
	if err := json.NewDecoder(r.Body).
		Decode(&b); err != nil || !b.Stream || !b.StreamOptions.IncludeUsage ||
		b.MaxTokens <= 0 {
		http.Error(w, fmt.Sprintf("bad request body (err %v)", err), http.StatusBadRequest)
		return
	}
	s.enter(b)
	var once sync.Once
	leave := func() { once.Do(s.leave) }
	defer leave()
	if s.Gate != nil {
		<-s.Gate
	}
	for k, v := range s.Headers {
		w.Header().Set(k, v)
	}
	switch s.Mode {
	case Mode500:
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusInternalServerError)
		return
	case Mode429:
		http.Error(w, `{"error":{"message":"busy"}}`, http.StatusTooManyRequests)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	s.stream(r.Context(), w, min(s.Tokens, b.MaxTokens), leave)
}

// sleep waits d or until the client goes away.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stream writes the answer; leave is called before the last event, so a client that sends its next
// request on [DONE] never overlaps this one in MaxInFlight.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, n int, leave func()) {
	fl := w.(http.Flusher)
	send := func(data string) { fmt.Fprintf(w, "data: %s\n\n", data); fl.Flush() }
	if !sleep(ctx, s.TTFT) {
		return
	}
	for i := range n {
		if i > 0 && !sleep(ctx, s.ITL) {
			return
		}
		if stop := s.fail(w, i, send); stop {
			return
		}
		if s.Mode != ModeEmpty {
			send(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}`)
		}
	}
	leave()
	send(
		fmt.Sprintf(
			`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
			n,
			s.Cached,
		),
	)
	if s.Mode != ModeNoDone {
		send("[DONE]")
	}
}

// fail injects the failure of Mode before token i and reports whether the stream ends there.
func (s *Server) fail(w http.ResponseWriter, i int, send func(string)) bool {
	switch {
	case s.Mode == ModeBroken && i == 2:
		panic(http.ErrAbortHandler)
	case s.Mode == ModeSSEError && i == 1:
		fmt.Fprint(w, "event: error\ndata: {\"message\":\"overloaded\"}\n\n")
		w.(http.Flusher).Flush()
		return true
	case s.Mode == ModeErrorChunk && i == 1:
		send(`{"error":{"message":"engine died","type":"server_error"}}`)
		return true
	case s.Mode == ModeGarbage && i == 1:
		send(`{"choices":[{"delta":`)
		return true
	}
	return false
}

func (s *Server) enter(b body) {
	text := b.Prompt
	if len(b.Messages) > 0 {
		text = b.Messages[len(b.Messages)-1].Content
	}
	var idx int
	_, _ = fmt.Sscanf(text, "Request %d.", &idx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies[idx] = b.Model + "|" + text
	s.arrivals[idx] = time.Now()
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
}

func (s *Server) leave() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}
