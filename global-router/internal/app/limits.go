package app

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// httpLimits bound what one client can hold on the router's HTTP ports (OpenAI, admin, metrics).
// The OpenAI and admin ports have no ReadTimeout or WriteTimeout: responses stream for as long as
// a generation (or a WatchClusters stream) lasts, and net/http's ReadTimeout would also cancel an
// HTTP/1.1 request whose body was read before it ran out. Bodies are bounded by BodyReadTimeout
// instead. The metrics port's answers are small and quick, so there the whole request and
// response are bounded (metricsHTTPLimits).
type httpLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers: a client that trickles them is cut
	// off. Default 10 s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive (or h2c) connection with no request for this long.
	// Default 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header block; HTTP/1.1 answers 431 beyond it (plus
	// net/http's 4 KiB slack) and h2c advertises it as SETTINGS_MAX_HEADER_LIST_SIZE. Default
	// 64 KiB, about Envoy's 60 KiB default.
	MaxHeaderBytes int
	// MaxConcurrentStreams bounds the concurrent requests of one HTTP/2 connection (h2c or
	// TLS). It matches the body budget: each stream's body starts in a buffer of at most 4 KiB
	// (contract/body.FirstSize) and grows only as its bytes arrive, so a connection's streams
	// make the router hold at most about 1 MiB it was not sent, besides the bodies' bytes,
	// which the in-flight budget bounds. Default 250.
	MaxConcurrentStreams int
	// MaxReceiveBuffer is HTTP/2's flow-control window per connection and per stream: the body
	// bytes a client may send ahead of the handler reading them. Default 1 MiB (net/http's).
	MaxReceiveBuffer int
	// ReadTimeout and WriteTimeout bound a whole request and a whole response; 0: none (the
	// OpenAI and admin ports, which stream). Default 0.
	ReadTimeout, WriteTimeout time.Duration
	// BodyReadTimeout bounds reading a request body on the OpenAI port, from the end of the
	// headers to the end of the body: a client that trickles its body is answered an error
	// instead of holding a request forever. The deadline is lifted once the body has been read,
	// so the streamed response is not bounded. Default 60 s (32 MiB at about 0.5 MiB/s).
	BodyReadTimeout time.Duration
}

// defaultHTTPLimits returns the defaults documented on httpLimits.
func defaultHTTPLimits() httpLimits {
	return httpLimits{
		ReadHeaderTimeout:    10 * time.Second,
		IdleTimeout:          2 * time.Minute,
		MaxHeaderBytes:       64 << 10,
		MaxConcurrentStreams: 250,
		MaxReceiveBuffer:     1 << 20,
		BodyReadTimeout:      time.Minute,
	}
}

// metricsHTTPLimits are the metrics port's limits: the defaults, and a request must be read
// within 10 s and its answer written within 30 s (a CPU profile or trace of --enable-pprof
// must end within that).
func metricsHTTPLimits() httpLimits {
	l := defaultHTTPLimits()
	l.ReadTimeout, l.WriteTimeout = 10*time.Second, 30*time.Second
	return l
}

// newHTTPServer returns a server for h speaking HTTP/1.1 and h2c within l.
func newHTTPServer(h http.Handler, l httpLimits) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: l.MaxConcurrentStreams,
			MaxReceiveBufferPerConnection: l.MaxReceiveBuffer, MaxReceiveBufferPerStream: l.MaxReceiveBuffer},
		Protocols: new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}

// withBodyDeadline gives every request body d to arrive: reading it past the deadline fails (the
// handler answers its read error, and the connection is closed after that answer). The deadline
// is lifted when the body has been read to its end, so the response may then stream for as long
// as it needs. It is kept after a failed read: lifting it would let net/http wait forever for the
// rest of the body before sending the handler's answer.
func withBodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d > 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.lift)
	}
	return n, err
}
