package contract_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

func TestIsReserved(t *testing.T) {
	tests := []struct {
		name              string
		reserved, routing bool
	}{
		{"x-switchyard-priority", false, true},
		{"X-Switchyard-Tenant", false, true},
		{"x-gateway-inference-objective", false, true},
		{"X-GATEWAY-INFERENCE-FAIRNESS-ID", false, true},
		{"x-switchyard-route", true, true},
		{"X-Switchyard-Cluster", true, true},
		{"x-switchyard-hand-back-ms", true, true},
		{"x-switchyard-overflow", true, true},
		{"x-gateway-destination-endpoint", true, true},
		{"X-Gateway-Destination-Endpoint-Subset", true, true},
		{"x-gateway-model-name", true, true},
		{"x-switchyard-priorityx", true, true},
		{"x-switchyard-", true, true},
		{"x-prefiller-host-port", true, true},
		{"X-Prefiller-Host-Port", true, true},
		{"x-prefiller-host-portx", false, false},
		{"x-llm-d-prefiller-host-port", true, true},
		{"X-Llm-D-Encoder-Hosts-Ports", true, true},
		{"x-llm-d-kv-cache-source-host-port", true, true},
		{"x-prefiller-url", true, true},
		{"X-Encoder-Hosts-Ports", true, true},
		{"x-kv-cache-source-host-port", true, true},
		{"x-data-parallel-host-port", true, true},
		{"x-data-parallel-host-portx", false, false},
		{"x-llm-", false, false},
		{"x-switchyard-pd", true, true},
		{"content-type", false, false},
		{"x-switchyar", false, false},
		{"x-forwarded-for", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := contract.IsReserved(tt.name); got != tt.reserved {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.name, got, tt.reserved)
		}
		if got := contract.IsRouting(tt.name); got != tt.routing {
			t.Errorf("IsRouting(%q) = %v, want %v", tt.name, got, tt.routing)
		}
	}
}

func TestHandBack(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		wire string
	}{
		{0, "1"}, {time.Microsecond, "1"}, {1500 * time.Microsecond, "1"}, {250 * time.Millisecond, "250"},
		{2 * time.Hour, "3600000"},
	} {
		if got := contract.FormatHandBack(tt.d); got != tt.wire {
			t.Errorf("FormatHandBack(%v) = %q, want %q", tt.d, got, tt.wire)
		}
		if _, err := contract.ParseHandBack(contract.FormatHandBack(tt.d)); err != nil {
			t.Errorf("ParseHandBack(FormatHandBack(%v)): %v", tt.d, err)
		}
	}
	for _, tt := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {" 250 ", 250 * time.Millisecond, true}, {"3600000", time.Hour, true},
		{"0", 0, false}, {"-5", 0, false}, {"3600001", 0, false}, {"1.5", 0, false}, {"1e3", 0, false},
		{"99999999999999999999", 0, false},
	} {
		got, err := contract.ParseHandBack(tt.v)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHandBack(%q) = %v, %v; want %v, ok %v", tt.v, got, err, tt.want, tt.ok)
		}
	}
}

func TestOverflow(t *testing.T) {
	h := http.Header{}
	if contract.IsOverflow(h) {
		t.Fatal("an empty header is not an overflow")
	}
	contract.SetOverflow(h)
	if !contract.IsOverflow(h) || h.Get("X-Switchyard-Overflow") != "1" {
		t.Fatalf("SetOverflow gave %v", h)
	}
}

func TestParseSessionID(t *testing.T) {
	long := strings.Repeat("s", contract.MaxSessionID)
	tests := []struct {
		name, v, want string
		err           bool
	}{
		{"empty", "", "", false},
		{"blank", "  \t", "", false},
		{"plain", "conv-42", "conv-42", false},
		{"trimmed", " conv-42 ", "conv-42", false},
		{"at the bound", long, long, false},
		{"over the bound", long + "s", "", true},
		{"control character", "a\x01b", "", true},
		{"delete", "a\x7fb", "", true},
		{"utf-8", "séance", "séance", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := contract.ParseSessionID(contract.HeaderSessionID, tt.v)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("ParseSessionID(%q) = %q, %v; want %q, error %v", tt.v, got, err, tt.want, tt.err)
			}
			if err != nil && !strings.Contains(err.Error(), contract.HeaderSessionID) {
				t.Fatalf("error %q does not name the header", err)
			}
		})
	}
	if contract.IsReserved(contract.HeaderSessionID) || contract.IsRouting(contract.HeaderSessionID) {
		t.Fatal("the session-id header must reach the next tier as the client sent it")
	}
}

func FuzzParseSessionID(f *testing.F) {
	for _, s := range []string{"", "conv", " a ", "a\x00", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := contract.ParseSessionID(contract.HeaderSessionID, v)
		if err != nil {
			return
		}
		if len(got) > contract.MaxSessionID || got != strings.TrimSpace(got) {
			t.Fatalf("ParseSessionID(%q) = %q: over the bound or untrimmed", v, got)
		}
	})
}

func TestParseSLO(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{" 500 ", 500 * time.Millisecond, true},
		{"2.5", 2500 * time.Microsecond, true},
		{"1e3", time.Second, true},
		{"+20", 20 * time.Millisecond, true},
		{"3600000", time.Hour, true},
		{"0.0000001", time.Nanosecond, true}, // rounds up to the least duration, never to "no objective"
		{"0", 0, false},
		{"-5", 0, false},
		{"3600000.5", 0, false},
		{"1e300", 0, false},
		{"NaN", 0, false},
		{"nan", 0, false},
		{"Inf", 0, false},
		{"+Inf", 0, false},
		{"0x1p4", 0, false},
		{"1_000", 0, false},
		{"fast", 0, false},
		{"500ms", 0, false},
		{"5,5", 0, false},
	} {
		got, err := contract.ParseSLO(tt.v)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSLO(%q) = %v, %v; want %v, ok %v", tt.v, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseSLO checks that any header value is either refused or read as a duration within
// (0, MaxSLO], and that an accepted value is not reserved or routing (it passes through).
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"", "500", "2.5", "1e3", "-1", "NaN", "Inf", "0x10", "3600000", "1e309", " 7 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := contract.ParseSLO(v)
		if err != nil {
			if d != 0 {
				t.Fatalf("ParseSLO(%q) refused with %v but returned %v", v, err, d)
			}
			return
		}
		if strings.TrimSpace(v) == "" {
			if d != 0 {
				t.Fatalf("ParseSLO(%q) = %v, want 0 for no objective", v, d)
			}
			return
		}
		if d <= 0 || d > contract.MaxSLO {
			t.Fatalf("ParseSLO(%q) = %v, outside (0, %v]", v, d, contract.MaxSLO)
		}
	})
}

func TestSLOHeadersPassThrough(t *testing.T) {
	for _, h := range []string{contract.HeaderSLOTTFT, contract.HeaderSLOTPOT} {
		if contract.IsReserved(h) || contract.IsRouting(h) {
			t.Errorf("%s must pass through both tiers unchanged", h)
		}
	}
}

func TestPrefixScoring(t *testing.T) {
	tests := []struct {
		in, reason string
		scheme     contract.PrefixScoring
		ok         bool
	}{
		{"precise", "", contract.PrefixScoringPrecise, true},
		{"approximate; reason=tokenize_failed", "tokenize_failed", contract.PrefixScoringApproximate, true},
		{" approximate ;reason=no_body ", "no_body", contract.PrefixScoringApproximate, true},
		{"", "", "", false},
		{"exact", "", "", false},
		{"approximate; because", "", "", false},
		{"approximate; reason=", "", "", false},
	}
	for _, tc := range tests {
		s, reason, err := contract.ParsePrefixScoring(tc.in)
		if (err == nil) != tc.ok || s != tc.scheme || reason != tc.reason {
			t.Errorf("ParsePrefixScoring(%q) = %q, %q, %v", tc.in, s, reason, err)
		}
		if tc.ok {
			if back, r, _ := contract.ParsePrefixScoring(contract.FormatPrefixScoring(s, reason)); back != s || r != reason {
				t.Errorf("round trip of %q: %q %q", tc.in, back, r)
			}
		}
	}
	if contract.IsReserved(contract.HeaderPrefixScoring) == false {
		t.Error("a client can set the prefix-scoring header")
	}
}
