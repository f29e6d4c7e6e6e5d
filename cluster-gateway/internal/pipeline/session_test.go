package pipeline_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
)

// TestSessionID checks where framework.Request.SessionID comes from: the configured header, else
// the body's metadata.session_id or user; and that a header over the bound is refused 400,
// logged and counted.
func TestSessionID(t *testing.T) {
	long := strings.Repeat("s", contract.MaxSessionID+1)
	tests := []struct {
		name, header, value, body, want string
		status                          int
	}{
		{"header", "x-session-id", "conv-1", `{"model":"llama","prompt":"x"}`, "conv-1", 0},
		{"header over the body", "x-session-id", "conv-1", `{"model":"llama","prompt":"x","user":"u"}`, "conv-1", 0},
		{"body user", "x-session-id", "", `{"model":"llama","prompt":"x","user":"u"}`, "u", 0},
		{
			"body metadata",
			"x-session-id",
			"",
			`{"model":"llama","messages":[],"metadata":{"session_id":"m"},"user":"u"}`,
			"m",
			0,
		},
		{"renamed header", "x-conversation", "c", `{"model":"llama","prompt":"x"}`, "c", 0},
		{"header reading off", "", "conv-1", `{"model":"llama","prompt":"x","user":"u"}`, "u", 0},
		{"none", "x-session-id", "", `{"model":"llama","prompt":"x"}`, "", 0},
		{"header over the bound", "x-session-id", long, `{"model":"llama","prompt":"x"}`, "", http.StatusBadRequest},
		{"control character", "x-session-id", "a\x01", `{"model":"llama","prompt":"x"}`, "", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			reg := prometheus.NewPedanticRegistry()
			pipe, sched := sessionPipeline(t, tt.header, reg, slog.New(slog.NewJSONHandler(&logs, nil)))
			sent := tt.header
			if sent == "" {
				sent = contract.HeaderSessionID
			}
			get := func(name string) string {
				if name == sent {
					return tt.value
				}
				return ""
			}
			d, apiErr := pipe.Decide(context.Background(), []byte(tt.body), get, nil)
			if tt.status != 0 {
				if apiErr == nil || apiErr.Status != tt.status || apiErr.Param != tt.header {
					t.Fatalf("error %+v, want %d naming %s", apiErr, tt.status, tt.header)
				}
				if !strings.Contains(logs.String(), "request refused: invalid header") {
					t.Fatalf("refusal not logged: %s", logs.String())
				}
				if n := invalidCount(t, reg, tt.header); n != 1 {
					t.Fatalf("invalid header count %g, want 1", n)
				}
				return
			}
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			defer pipe.Done(d)
			if sched.session != tt.want {
				t.Fatalf("scheduler saw session %q, want %q", sched.session, tt.want)
			}
		})
	}
}

// sessionScheduler records the session id of the last request it scheduled.
type sessionScheduler struct {
	capturing
	session string
}

func (s *sessionScheduler) Schedule(ctx context.Context, req *framework.Request) (*framework.Result, error) {
	s.session = req.SessionID
	return s.capturing.Schedule(ctx, req)
}

func sessionPipeline(
	t *testing.T,
	header string,
	reg prometheus.Registerer,
	log *slog.Logger,
) (*pipeline.Pipeline, *sessionScheduler) {
	t.Helper()
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:8000"}})
	for _, ep := range store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama"})
	}
	sched := &sessionScheduler{capturing: capturing{eps: store.View().Endpoints()}}
	router, err := bbr.NewRouter(bbr.DefaultConfig(), store)
	if err != nil {
		t.Fatal(err)
	}
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	flow, err := flowcontrol.New(fcfg, sched, flowcontrol.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(
		pipeline.Options{Router: router, Flow: flow, Classify: fcfg, Metrics: m, SessionHeader: header, Logger: log},
	)
	if err != nil {
		t.Fatal(err)
	}
	return pipe, sched
}
