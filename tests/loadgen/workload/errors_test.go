package workload_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

func TestParseErrorsNameTheField(t *testing.T) {
	const good = "arrival: {process: poisson, rate: 5}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top-level field", good + "rates: 5\n", "field rates not found"},
		{
			"unknown nested field",
			"arrival: {process: poisson, rate: 5, burst: 2}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"field burst not found",
		},
		{
			"bad distribution",
			"arrival: {process: poisson, rate: 5}\nprompt: {dist: gaussian, mean: 10}\noutput: {dist: fixed, value: 10}\n",
			"prompt.dist: unknown distribution \"gaussian\"",
		},
		{
			"missing distribution",
			"arrival: {process: poisson, rate: 5}\nprompt: {dist: fixed, value: 10}\noutput: {mean: 10}\n",
			"output.dist: required",
		},
		{
			"lognormal sigma",
			"arrival: {process: poisson, rate: 5}\nprompt: {dist: lognormal, mean: 10, sigma: -1}\noutput: {dist: fixed, value: 10}\n",
			"prompt.sigma",
		},
		{
			"uniform bounds",
			"arrival: {process: poisson, rate: 5}\nprompt: {dist: uniform, min: 10, max: 5}\noutput: {dist: fixed, value: 10}\n",
			"prompt.max",
		},
		{
			"bad process",
			"arrival: {process: gamma, rate: 5}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"arrival.process",
		},
		{
			"zero rate",
			"arrival: {process: poisson}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"arrival.rate",
		},
		{
			"burst too dense",
			"arrival: {process: onoff, rate: 5, burst_factor: 5}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"arrival.burst_factor",
		},
		{
			"closed without concurrency",
			"arrival: {process: closed}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"arrival.concurrency",
		},
		{"no arrival", "prompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n", "arrival: required"},
		{"bad endpoint", good + "endpoint: embeddings\n", "endpoint:"},
		{"bad duration", good + "duration: soon\n", "duration"},
		{"negative duration", good + "duration: -5s\n", "duration: must be > 0"},
		{"adapter shares", good + "adapters: [{name: a, share: 0.7}, {name: b, share: 0.7}]\n", "adapters: shares sum"},
		{"duplicate adapter", good + "adapters: [{name: a, share: 0.1}, {name: a, share: 0.1}]\n", "adapters[1].name"},
		{
			"prompt and shared prefix",
			good + "shared_prefix: {groups: 1, prompts_per_group: 1, system_tokens: 1, question_tokens: 1}\n",
			"prompt: exclusive",
		},
		{
			"shared prefix groups",
			"arrival: {process: poisson, rate: 5}\noutput: {dist: fixed, value: 10}\nshared_prefix: {prompts_per_group: 1, system_tokens: 1, question_tokens: 1}\n",
			"shared_prefix.groups",
		},
		{
			"region closed loop",
			"regions: [{name: r, arrival: {process: closed, concurrency: 2}}]\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"regions[0].arrival.process",
		},
		{
			"region rate",
			"regions: [{name: r, arrival: {process: poisson}}]\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n",
			"regions[0].arrival.rate",
		},
		{
			"huge prompt",
			"arrival: {process: poisson, rate: 5}\nprompt: {dist: fixed, value: 99999999}\noutput: {dist: fixed, value: 10}\n",
			"prompt.value",
		},
		{"empty document", "", "empty document"},
		{"wrong type", "arrival: [1, 2]\n", "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := workload.Parse("bad.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad.yaml") {
				t.Fatalf("error %q does not contain %q and the source name", err, tt.want)
			}
		})
	}
	if _, err := workload.Parse("good.yaml", []byte(good)); err != nil {
		t.Fatalf("good workload: %v", err)
	}
}

func TestTypeErrorsNameTheField(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"duration: soon\n", "(field duration)"},
		{"arrival:\n  process: poisson\n  rate: fast\n", "(field arrival.rate)"},
		{"arrival: {process: poisson, rate: fast}\n", "(field arrival)"},
		{"adapters:\n  - name: a\n    share: lots\n", "(field adapters[0].share)"},
	}
	for _, tt := range tests {
		_, err := workload.Parse("bad.yaml", []byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(
		[]byte("arrival: {process: poisson, rate: 5}\nprompt: {dist: fixed, value: 10}\noutput: {dist: fixed, value: 10}\n"),
	)
	f.Add(
		[]byte(
			"regions: [{name: r, arrival: {process: onoff, rate: 1}}]\nshared_prefix: {groups: 1, prompts_per_group: 1, system_tokens: 1, question_tokens: 1}\noutput: {dist: lognormal, mean: 3}\n",
		),
	)
	f.Add([]byte("duration: 1s\narrival:\n  rate: [x]\n"))
	f.Add(
		[]byte(
			"trace: {format: mooncake, path: t.jsonl, time_scale: 2, prompt_scale: 0.25, start: 1m, max_requests: 9}\nslo: {ttft: 1s}\n",
		),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := workload.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("parsed workload does not validate: %v", err)
		}
	})
}
