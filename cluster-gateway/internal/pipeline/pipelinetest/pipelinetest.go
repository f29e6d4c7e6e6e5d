// Package pipelinetest is test support for the request pipeline's front doors, the HTTP proxy
// and the ext_proc server: a structured log that a test reads while the server's goroutines
// write it, and the count of request bodies refused by door and reason, which both doors'
// slow-body, budget and size tests check.
package pipelinetest

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Log is a JSON log that a server under test writes from its goroutines and that the test reads.
type Log struct {
	// Logger writes JSON records (slog.NewJSONHandler) into the log.
	Logger *slog.Logger

	mu sync.Mutex
	b  bytes.Buffer
}

// NewLog returns an empty log.
func NewLog() *Log {
	l := &Log{}
	l.Logger = slog.New(slog.NewJSONHandler(l, nil))
	return l
}

// Write appends p to the log; it is safe for concurrent use.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was logged so far, one JSON record a line.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// BodyRefusedMetric counts the request bodies the front doors refused, by door and reason.
const BodyRefusedMetric = "switchyard_gateway_request_body_refused_total"

// BodyRefused returns BodyRefusedMetric{door, reason} gathered from g: door is "http" or
// "ext_proc", reason "too_large", "budget" or "timeout". It fails tb when g holds no such series
// (no body was refused for that reason yet, or the metric is registered elsewhere).
func BodyRefused(tb testing.TB, g prometheus.Gatherer, door, reason string) float64 {
	tb.Helper()
	families, err := g.Gather()
	if err != nil {
		tb.Fatalf("pipelinetest: gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != BodyRefusedMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["door"] == door && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	tb.Fatalf("pipelinetest: no %s{door=%q,reason=%q}", BodyRefusedMetric, door, reason)
	return 0
}
