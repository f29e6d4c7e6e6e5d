package pdhandler_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/pdhandler"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestParams(t *testing.T) {
	tests := []struct{ name, params, wantErr, decode, prefill string }{
		{"defaults", ``, "", "decode", "prefill"},
		{"llm-d's", `{"threshold": 100, "hashBlockSize": 16}`, "", "decode", "prefill"},
		{"named", `{"decodeProfile": "d", "prefillProfile": "p"}`, "", "d", "p"},
		{"negative threshold", `{"threshold": -1}`, "threshold", "", ""},
		{"same profiles", `{"decodeProfile": "x", "prefillProfile": "x"}`, "both", "", ""},
		{"unknown parameter", `{"primaryPort": 8000}`, "unknown field", "", ""},
		{"selective", `{"selective": true, "itlBudget": "20ms", "transferPerToken": "2us", ` +
			`"prefillTokensPerSecond": 30000}`, "", "decode", "prefill"},
		{"negative ITL budget", `{"selective": true, "itlBudget": "-1ms"}`, "itlBudget", "", ""},
		{"negative transfer", `{"transferPerToken": "-1us"}`, "transferPerToken", "", ""},
		{"zero prefill speed", `{"prefillTokensPerSecond": 0}`, "prefillTokensPerSecond", "", ""},
		{"duration not a string", `{"itlBudget": 50}`, "duration", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pdhandler.Factory("h", []byte(tt.params), plugintest.NewHandle())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, pf := p.(*pdhandler.Handler).Profiles()
			if d != tt.decode || pf != tt.prefill {
				t.Fatalf("profiles %q %q, want %q %q", d, pf, tt.decode, tt.prefill)
			}
		})
	}
}
