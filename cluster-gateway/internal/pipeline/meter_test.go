package pipeline

import (
	"testing"
	"time"
)

func TestMeterSSE(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var m Meter
	m.Reset(t0, true)
	chunks := []string{
		"data: {\"choices\":[{\"text\":\"a\"}],\"usage\":null}\n\n",
		"data: {\"choices\":[{\"te", "xt\":\"b\"}]}\n\ndata: {\"choices\":[{\"text\":\"c\"}]}\r\n\r\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n",
		"data: [DONE]\n\n",
	}
	for i, c := range chunks {
		m.Write([]byte(c), t0.Add(time.Duration(i+1)*100*time.Millisecond))
	}
	got := m.Finish()
	want := Measurement{TTFT: 100 * time.Millisecond, MeanITL: 100 * time.Millisecond, OutputTokens: 3, PromptTokens: 12, CachedTokens: 8}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestMeterWithoutUsage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name   string
		sse    bool
		chunks []string
		want   Measurement
	}{
		{"sse no usage", true, []string{"data: {\"choices\":[{\"text\":\"a\"}]}\n\n", "data: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n"},
			Measurement{TTFT: 10 * time.Millisecond, MeanITL: 10 * time.Millisecond, OutputTokens: 2, PromptTokens: -1, CachedTokens: -1}},
		{"json with usage", false, []string{`{"choices":[{"text":"abc"}],`, `"usage":{"prompt_tokens":4,"completion_tokens":2}}`},
			Measurement{TTFT: 10 * time.Millisecond, OutputTokens: 2, PromptTokens: 4, CachedTokens: -1}},
		{"empty", true, nil, Measurement{PromptTokens: -1, CachedTokens: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meter
			m.Reset(t0, tt.sse)
			for i, c := range tt.chunks {
				m.Write([]byte(c), t0.Add(time.Duration(i+1)*10*time.Millisecond))
			}
			if got := m.Finish(); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzMeter(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n"), true)
	f.Add([]byte(`{"usage":{"completion_tokens":2}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, sse bool) {
		var m Meter
		m.Reset(time.Unix(0, 0), sse)
		m.Write(data, time.Unix(1, 0))
		if got := m.Finish(); got.TTFT < 0 || got.MeanITL < 0 {
			t.Fatalf("negative timing %+v", got)
		}
	})
}
