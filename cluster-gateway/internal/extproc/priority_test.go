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
