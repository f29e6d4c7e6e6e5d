package extproc_test

import (
	"context"
	"encoding/json"
	"testing"
)

// Through ext_proc, a priority header outside the configured range (-10..10 by default) or not
// an integer gets an immediate 400 whose OpenAI-style error names the header; one in range is
// scheduled.
func TestPriorityRange(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, priority string
		want           int // 0: scheduled (no immediate response)
	}{
		{"highest band", "10", 0},
		{"lowest band", "-10", 0},
		{"above the range", "11", 400},
		{"below the range", "-11", 400},
		{"not an integer", "urgent", 400},
		{"huge", "99999999999999999999", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := e.client.Process(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sendRequest(t, s, []byte(`{"model":"llama","prompt":"x"}`), nil, "x-switchyard-priority", tt.priority)
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			ir := r.GetImmediateResponse()
			if tt.want == 0 {
				if ir != nil || r.GetRequestHeaders() == nil {
					t.Fatalf("priority %s not scheduled: %v", tt.priority, r)
				}
				_ = s.CloseSend()
				return
			}
			var body struct {
				Error struct{ Type, Param, Message string } `json:"error"`
			}
			if int(ir.GetStatus().GetCode()) != tt.want || json.Unmarshal(ir.GetBody(), &body) != nil ||
				body.Error.Param != "x-switchyard-priority" || body.Error.Type != "invalid_request_error" {
				t.Fatalf("immediate response = %v", r)
			}
		})
	}
}

// Through ext_proc, a latency objective that is not milliseconds above 0 and at most an hour
// gets an immediate 400 naming the header, read through the same pipeline as the HTTP proxy.
func TestSLOHeaders(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, header, value string
		want                int // 0: scheduled
	}{
		{"ttft", "x-slo-ttft-ms", "250", 0},
		{"tpot", "x-slo-tpot-ms", "20", 0},
		{"ttft zero", "x-slo-ttft-ms", "0", 400},
		{"tpot infinite", "x-slo-tpot-ms", "Inf", 400},
		{"ttft over an hour", "x-slo-ttft-ms", "3600001", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := e.client.Process(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sendRequest(t, s, []byte(`{"model":"llama","prompt":"x"}`), nil, tt.header, tt.value)
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			ir := r.GetImmediateResponse()
			if tt.want == 0 {
				if ir != nil || r.GetRequestHeaders() == nil {
					t.Fatalf("%s: %s not scheduled: %v", tt.header, tt.value, r)
				}
				_ = s.CloseSend()
				return
			}
			var body struct {
				Error struct{ Type, Param, Code string } `json:"error"`
			}
			if int(ir.GetStatus().GetCode()) != tt.want || json.Unmarshal(ir.GetBody(), &body) != nil ||
				body.Error.Param != tt.header || body.Error.Code != "invalid_request" {
				t.Fatalf("immediate response = %v", r)
			}
		})
	}
}
