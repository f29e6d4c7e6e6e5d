package capmap

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// retryMillis is the reconnection delay the event stream asks browsers for.
const retryMillis = 2000

// tooManyStreams is the answer when MaxStreams event streams are open.
var tooManyStreams = openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServiceUnavailable,
	Code: contract.ReasonOverloaded, RetryAfterSeconds: 5,
	Message: "capacity map: too many event streams open; close another map tab or retry later"}

// serveEvents streams snapshots as server-sent events ("event: snapshot", the snapshot's JSON
// as data): one at once, then one every Interval, until the browser goes away, a write misses
// its WriteTimeout, the session ends, MaxStreamDuration passes, or the router shuts down.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.metrics.refused.WithLabelValues(reasonTooManyStreams).Inc()
		s.log.Warn("capacity map: event stream refused, too many open", "max_streams", s.cfg.MaxStreams,
			"remote", r.RemoteAddr)
		tooManyStreams.Write(w)
		return
	}
	s.metrics.streams.Inc()
	defer func() {
		s.metrics.streams.Dec()
		<-s.slots
	}()
	reason := s.stream(w, r)
	s.metrics.ended.WithLabelValues(reason).Inc()
	s.log.Debug("capacity map: event stream ended", "reason", reason, "remote", r.RemoteAddr)
}

// stream writes the events of one stream and returns why it ended.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) string {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	write := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	// A writer without deadlines cannot bound a slow browser: refuse to stream on it.
	if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil {
		s.internalError(w, errors.New("capmap: the connection takes no write deadline"))
		return endWriteFailed
	}
	w.WriteHeader(http.StatusOK)
	if write([]byte("retry: "+strconv.Itoa(retryMillis)+"\n\n")) != nil {
		return endWriteFailed
	}
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	end := time.NewTimer(s.cfg.MaxStreamDuration)
	defer end.Stop()
	var msg bytes.Buffer
	for {
		if _, ok := s.session(r); !ok {
			return endSession
		}
		snap, err := s.snaps.current()
		if err != nil {
			s.log.Error("capacity map: snapshot failed", "err", err)
			return endWriteFailed
		}
		msg.Reset()
		msg.WriteString("event: snapshot\ndata: ")
		msg.Write(snap) // JSON from encoding/json holds no newline
		msg.WriteString("\n\n")
		start := time.Now()
		if err := write(msg.Bytes()); err != nil {
			// A missed deadline also cancels the request's context: tell it from a browser
			// that left by the error, or by the time the write took.
			if r.Context().Err() != nil && !errors.Is(err, os.ErrDeadlineExceeded) &&
				time.Since(start) < s.cfg.WriteTimeout {
				return endClientGone
			}
			return endWriteFailed
		}
		select {
		case <-r.Context().Done():
			return endClientGone
		case <-s.done:
			return endShutdown
		case <-end.C:
			return endMaxDuration
		case <-tick.C:
		}
	}
}

// internalError answers a failure of the map itself: 500, logged.
func (s *Server) internalError(w http.ResponseWriter, err error) {
	s.log.Error("capacity map: internal error", "err", err)
	(&openai.Error{Status: http.StatusInternalServerError, Type: openai.TypeServiceUnavailable,
		Message: "capacity map: " + err.Error()}).Write(w)
}
