package tenantlimits_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]tenantlimits.Limits
		err      string // a substring of the error; "" for none
	}{
		{
			name: "full",
			in: "acme:\n  requests_per_second: 2.5\n  max_concurrent: 4\n  tokens_per_minute: 1000\n" +
				"\"*\":\n  requests_per_second: 1\nfree: {}\n",
			want: map[string]tenantlimits.Limits{
				"acme": {RequestsPerSecond: 2.5, MaxConcurrent: 4, TokensPerMinute: 1000},
				"*":    {RequestsPerSecond: 1},
				"free": {},
			},
		},
		{name: "empty table", in: "{}\n", want: map[string]tenantlimits.Limits{}},
		{name: "empty file", in: " \n", err: "file is empty"},
		{name: "a list", in: "- acme\n", err: "line 1: the file is a mapping"},
		{name: "unknown key", in: "acme:\n  tokens_per_min: 5\n", err: `line 2: unknown key "tokens_per_min"`},
		{name: "negative", in: "acme:\n  max_concurrent: -1\n", err: `tenant "acme": max_concurrent -1 is outside`},
		{name: "too many tokens", in: "acme:\n  tokens_per_minute: 1000000000001\n", err: "tokens_per_minute"},
		{
			name: "fractional tokens",
			in:   "acme:\n  tokens_per_minute: 1.5\n",
			err:  "line 2: tokens_per_minute must be a whole number",
		},
		{name: "rate not a number", in: "acme:\n  requests_per_second: fast\n", err: `tenant "acme"`},
		{name: "NaN rate", in: "acme:\n  requests_per_second: .nan\n", err: "requests_per_second NaN"},
		{name: "listed twice", in: "acme: {}\nacme: {}\n", err: "line 2"},
		{name: "bad name", in: "\"ac me\": {}\n", err: `tenant name "ac me" may only hold`},
		{name: "limits not a mapping", in: "acme: 5\n", err: "limits are a mapping"},
		{name: "not YAML", in: "acme: [\n", err: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := tenantlimits.Parse([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tab.Len() != len(tt.want) {
				t.Fatalf("%d entries (%v), want %d", tab.Len(), tab.Names(), len(tt.want))
			}
			for name, want := range tt.want {
				got, key, ok := tab.Lookup(name)
				if !ok || got != want || key != name {
					t.Fatalf("Lookup(%q) = %+v %q %v, want %+v", name, got, key, ok, want)
				}
			}
		})
	}
}

// TestLookupOthers: a tenant the file does not list, or no tenant, is charged to "*", and a
// tenant cannot name "*" to be charged anywhere else.
func TestLookupOthers(t *testing.T) {
	tab, err := tenantlimits.Parse([]byte("acme: {max_concurrent: 1}\n\"*\": {max_concurrent: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "stranger", "*"} {
		if lim, key, ok := tab.Lookup(name); !ok || key != tenantlimits.Others || lim.MaxConcurrent != 2 {
			t.Fatalf("Lookup(%q) = %+v %q %v, want the * entry", name, lim, key, ok)
		}
	}
	without, err := tenantlimits.Parse([]byte("acme: {max_concurrent: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := without.Lookup("stranger"); ok {
		t.Fatal("an unlisted tenant is limited without a * entry")
	}
}

// FuzzParse: every file Parse accepts has valid limits under valid names.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"acme:\n  requests_per_second: 2\n", "{}", "\"*\": {tokens_per_minute: 5}\n", "a: {max_concurrent: 1e3}\n",
		"a: &x {max_concurrent: 1}\nb: *x\n", "a:\n  <<: {max_concurrent: 1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tab, err := tenantlimits.Parse(raw)
		if err != nil {
			return
		}
		for _, name := range tab.Names() {
			lim, _, ok := tab.Lookup(name)
			if !ok {
				t.Fatalf("listed %q not found", name)
			}
			if err := lim.Validate(); err != nil {
				t.Fatalf("accepted %q with invalid limits: %v", name, err)
			}
			if name == "" || strings.ContainsAny(name, " \t\r\n\x00/") {
				t.Fatalf("accepted tenant name %q", name)
			}
		}
	})
}
