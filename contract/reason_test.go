package contract_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/switchyard-dev/switchyard/contract"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Every reason has a snake_case spelling, a text of its own and at least one place it appears,
// and parses back from its spelling.
func TestReasonsWellFormed(t *testing.T) {
	all := contract.Reasons(0)
	if len(all) < 46 {
		t.Fatalf("%d reasons, want at least 46", len(all))
	}
	texts := map[string]contract.Reason{}
	for _, r := range all {
		if !snakeCase.MatchString(r.String()) {
			t.Errorf("%q is not snake_case", r)
		}
		if r.Text() == "" {
			t.Errorf("%q has no text", r)
		}
		if prev, dup := texts[r.Text()]; dup {
			t.Errorf("%q and %q share the text %q", r, prev, r.Text())
		}
		texts[r.Text()] = r
		if r.Uses() == 0 {
			t.Errorf("%q appears nowhere", r)
		}
		if got, err := contract.ParseReason(r.String()); err != nil || got != r {
			t.Errorf("ParseReason(%q) = %q, %v", r, got, err)
		}
	}
}

func TestParseReason(t *testing.T) {
	tests := []struct {
		in      string
		want    contract.Reason
		wantErr bool
	}{
		{"drained", contract.ReasonDrained, false},
		{"chosen_local_returning", contract.ReasonChosenLocalReturning, false},
		{"no_capacity", contract.ReasonNoCapacity, false},
		{"", "", true},
		{"Drained", "", true},
		{"drained ", "", true},
		{"does not serve the model", "", true}, // a text is not a spelling
		{"bogus", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := contract.ParseReason(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseReason(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// In JSON a reason is its spelling; decoding refuses an unknown one.
func TestReasonJSON(t *testing.T) {
	type doc struct {
		Code contract.Reason `json:"code"`
	}
	b, err := json.Marshal(doc{contract.ReasonOverThreshold})
	if err != nil || string(b) != `{"code":"over_threshold"}` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.Code != contract.ReasonOverThreshold {
		t.Fatalf("unmarshal = %+v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`{"code":"over the overflow threshold"}`), &d); err == nil {
		t.Fatal("an unknown reason decoded")
	}
}

// The texts the router has always shown for its candidates are unchanged: clients and tests read
// them.
func TestReasonTexts(t *testing.T) {
	tests := []struct {
		r    contract.Reason
		text string
	}{
		{contract.ReasonChosenLocal, "chosen: local first, under the overflow threshold"},
		{
			contract.ReasonChosenOverflowReturning,
			"chosen: overflow, no local cluster has room; returning from slow start, sent its share whatever its estimate",
		},
		{contract.ReasonNotServed, "does not serve the model"},
		{contract.ReasonRegionNotAllowed, "region not allowed by policy"},
		{contract.ReasonDrained, "drained"},
		{contract.ReasonStale, "stale capacity summary"},
		{contract.ReasonUnhealthy, "unhealthy (passive health)"},
		{contract.ReasonLocalOnly, "outside the router's region (local-only routing mode)"},
		{contract.Reason("not_a_reason"), "not_a_reason"},
	}
	for _, tt := range tests {
		t.Run(tt.r.String(), func(t *testing.T) {
			if got := tt.r.Text(); got != tt.text {
				t.Fatalf("Text() = %q, want %q", got, tt.text)
			}
		})
	}
}

// Reasons(use) is the bounded label set of each metric that takes reasons.
func TestReasonsByUse(t *testing.T) {
	tests := []struct {
		use  contract.Use
		want []contract.Reason
	}{
		{
			contract.UseLeftRegion,
			[]contract.Reason{contract.ReasonMissesSLO, contract.ReasonNoLocal, contract.ReasonOverThreshold,
				contract.ReasonPastThroughput, contract.ReasonRemoteSooner, contract.ReasonUnavailable},
		},
		{contract.UsePolicy, []contract.Reason{contract.ReasonNotLoaded, contract.ReasonUndecodable}},
		{
			contract.UsePublish,
			[]contract.Reason{contract.ReasonPublishChange, contract.ReasonPublishFirst, contract.ReasonPublishHeartbeat},
		},
		{
			contract.UseFlowOutcome,
			[]contract.Reason{contract.ReasonFlowCancelled, contract.ReasonFlowDispatched, contract.ReasonFlowError,
				contract.ReasonFlowEvicted, contract.ReasonFlowExpired, contract.ReasonFlowHandedBack, contract.ReasonFlowRejected},
		},
	}
	for _, tt := range tests {
		if got := contract.Reasons(tt.use); !slices.Equal(got, tt.want) {
			t.Errorf("Reasons(%d) = %v, want %v", tt.use, got, tt.want)
		}
	}
	for _, r := range contract.Reasons(contract.UseRouterError | contract.UseGatewayError) {
		if r.Uses()&(contract.UseRouterError|contract.UseGatewayError) == 0 {
			t.Errorf("%q listed as an error code", r)
		}
	}
}
