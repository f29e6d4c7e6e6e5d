package proxy

import (
	"net/http"
	"strconv"
	"time"
)

// HeaderServerTiming is the W3C Server-Timing response header. Every inference answer carries
// a metric named TimingMetric whose dur is the milliseconds the gateway spent on the request,
// from its arrival to the response headers (queueing, scheduling, the model server's time to
// its headers). A global router subtracts it from its own wait for the headers to measure the
// network round trip to this cluster on real traffic.
const (
	HeaderServerTiming = "Server-Timing"
	TimingMetric       = "gateway"
)

// timedWriter adds the gateway's Server-Timing metric to an answer's headers as they are sent.
// It unwraps for http.ResponseController, so flushing and deadlines reach the real writer.
type timedWriter struct {
	http.ResponseWriter
	start time.Time
	sent  bool
}

// withTiming wraps h so its answers carry the gateway's Server-Timing metric.
func withTiming(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(&timedWriter{ResponseWriter: w, start: time.Now()}, r)
	}
}

func (t *timedWriter) WriteHeader(code int) {
	if !t.sent && code >= 200 { // 1xx answers are interim: the final headers follow
		t.sent = true
		t.Header().Add(HeaderServerTiming, timingValue(time.Since(t.start)))
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *timedWriter) Write(b []byte) (int, error) {
	if !t.sent {
		t.WriteHeader(http.StatusOK)
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer (http.ResponseController).
func (t *timedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// timingValue renders d as the gateway metric, in milliseconds with microsecond precision.
func timingValue(d time.Duration) string {
	b := make([]byte, 0, 24)
	b = append(b, TimingMetric+";dur="...)
	b = strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 3, 64)
	return string(b)
}
