package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"
)

func TestMeterSSE(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var m Meter
	m.Reset(t0, true)
	chunks := []string{
		"data: {\"choices\":[{\"text\":\"a\"}],\"usage\":null}\n\n",
		"data: {\"choices\":[{\"te",
		"xt\":\"b\"}]}\n\ndata: {\"choices\":[{\"text\":\"c\"}]}\r\n\r\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3," +
			"\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n",
		"data: [DONE]\n\n",
	}
	for i, c := range chunks {
		m.Write([]byte(c), t0.Add(time.Duration(i+1)*100*time.Millisecond))
	}
	got := m.Finish()
	want := Measurement{
		TTFT:         100 * time.Millisecond,
		MeanITL:      100 * time.Millisecond,
		OutputTokens: 3,
		PromptTokens: 12,
		CachedTokens: 8,
	}
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
		{
			"sse no usage",
			true,
			[]string{"data: {\"choices\":[{\"text\":\"a\"}]}\n\n", "data: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n"},
			Measurement{
				TTFT:         10 * time.Millisecond,
				MeanITL:      10 * time.Millisecond,
				OutputTokens: 2,
				PromptTokens: -1,
				CachedTokens: -1,
			},
		},
		{
			"json with usage",
			false,
			[]string{`{"choices":[{"text":"abc"}],`, `"usage":{"prompt_tokens":4,"completion_tokens":2}}`},
			Measurement{TTFT: 10 * time.Millisecond, OutputTokens: 2, PromptTokens: 4, CachedTokens: -1},
		},
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

// responsesStream is a Responses API stream as vLLM sends it: typed events with event: lines,
// lifecycle events before the first delta, the usage in response.completed, no [DONE].
var responsesStream = []string{
	"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0," +
		"\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n",
	"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1," +
		"\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\nevent: response.output_item.added\n" +
		"data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"message\",\"content\":[]}}\n\n" +
		"event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\"," +
		"\"part\":{\"type\":\"output_text\",\"text\":\"\"}}\n\n",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" " +
		"one\",\"item_id\":\"msg_1\"}\n\n",
	"event: response.output_text.delta\r\ndata: {\"type\":\"response.output_text.delta\",\"del",
	"ta\":\" two\"}\r\n\r\n",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" six\"}\n\n" +
		"event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\" one two six\"}\n\n",
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9," +
		"\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\"," +
		"\"content\":[{\"type\":\"output_text\",\"text\":\" one two six\"}]}],\"usage\":{\"input_tokens\":21," +
		"\"input_tokens_details\":{\"cached_tokens\":16},\"output_tokens\":3,\"total_tokens\":24}}}\n\n",
}

// withoutEventLines is stream with its event: lines dropped: the data alone names each event.
func withoutEventLines(stream []string) []string {
	whole := strings.Join(stream, "")
	var out []string
	for line := range strings.Lines(whole) {
		if !strings.HasPrefix(line, "event:") {
			out = append(out, line)
		}
	}
	return out
}

// TestMeterResponses checks that a Responses API stream's first token is its first delta, not
// response.created, and that the usage comes from response.completed.
func TestMeterResponses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name   string
		chunks []string
		want   Measurement
	}{
		{"named events", responsesStream, Measurement{OutputTokens: 3, PromptTokens: 21, CachedTokens: 16}},
		{"data alone", withoutEventLines(responsesStream), Measurement{OutputTokens: 3, PromptTokens: 21, CachedTokens: 16}},
		{
			"reasoning deltas are tokens",
			[]string{
				"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n",
				"event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}\n\n",
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
				"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"usage\":{\"input_tokens\":5," +
					"\"output_tokens\":2}}}\n\n",
			},
			Measurement{OutputTokens: 2, PromptTokens: 5, CachedTokens: -1},
		},
		{"no usage reported", responsesStream[:5], Measurement{OutputTokens: 2, PromptTokens: -1, CachedTokens: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meter
			m.Reset(t0, true)
			at := func(i int) time.Time { return t0.Add(time.Duration(i+1) * 10 * time.Millisecond) }
			first, want := time.Time{}, time.Time{} // the first token, and the first delta's arrival
			for i, c := range tt.chunks {
				if want.IsZero() && strings.Contains(c, `.delta"`) {
					want = at(i)
				}
				m.Write([]byte(c), at(i))
				if first.IsZero() && m.Tokens() > 0 {
					first = at(i)
				}
				if m.Tokens() == 0 && strings.Contains(c, ".delta") {
					t.Fatalf("chunk %d has a delta, yet no token counted", i)
				}
			}
			if !first.Equal(want) {
				t.Fatalf("first token at %v, want the first delta's %v", first.Sub(t0), want.Sub(t0))
			}
			got := m.Finish()
			if got.TTFT != first.Sub(t0) || got.TTFT == 0 {
				t.Fatalf("TTFT %v, want %v", got.TTFT, first.Sub(t0))
			}
			got.TTFT, got.MeanITL = 0, 0
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestMeterResponsesJSON checks a non-streaming Responses API answer's usage.
func TestMeterResponsesJSON(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var m Meter
	m.Reset(t0, false)
	m.Write(
		[]byte(
			`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message",`+
				`"content":[{"type":"output_text","text":"hi"}]}],`,
		),
		t0.Add(time.Second),
	)
	m.Write(
		[]byte(`"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"total_tokens":10}}`),
		t0.Add(2*time.Second),
	)
	want := Measurement{TTFT: time.Second, OutputTokens: 1, PromptTokens: 9, CachedTokens: 0}
	if got := m.Finish(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestMeterChatMentioningResponses checks that chat chunks whose text looks like a Responses
// event name are still chunks.
func TestMeterChatMentioningResponses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var m Meter
	m.Reset(t0, true)
	m.Write(
		[]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\\\"type\\\":\\\"response.created\\\"\"}}]}\n\n"),
		t0.Add(time.Second),
	)
	m.Write(
		[]byte("data: {\"type\":\"chat\",\"choices\":[{\"delta\":{\"content\":\"\\\"response.x\"}}]}\n\n"),
		t0.Add(2*time.Second),
	)
	if got := m.Finish(); got.OutputTokens != 2 || got.TTFT != time.Second {
		t.Fatalf("got %+v, want 2 tokens from 1s", got)
	}
}

// BenchmarkMeterResponses meters a Responses API stream of 256 deltas.
func BenchmarkMeterResponses(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(responsesStream[0] + responsesStream[1])
	for range 256 {
		sb.WriteString(
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":12," +
				"\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" tok\",\"logprobs\":[]}\n\n",
		)
	}
	sb.WriteString(responsesStream[len(responsesStream)-1])
	stream := []byte(sb.String())
	now := time.Unix(1000, 0)
	var m Meter
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		m.Reset(now, true)
		for p := stream; len(p) > 0; p = p[min(len(p), 512):] {
			m.Write(p[:min(len(p), 512)], now)
		}
		if m.Finish().PromptTokens != 21 {
			b.Fatal("no usage")
		}
	}
}

func FuzzMeter(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n"), true)
	f.Add([]byte(strings.Join(responsesStream, "")), true)
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

// TestMeterSkipsAnOverlongSSELine: an SSE line over usagemeter.MaxBuffered is skipped whole (never
// spliced from its first and last parts), and the lines after it are metered.
func TestMeterSkipsAnOverlongSSELine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	budget := body.NewBudget(8 << 20)
	var m Meter
	m.UseBudget(budget)
	m.Reset(t0, true)
	chunks := []string{
		`data: {"choices":[],"x":"` + strings.Repeat("a", usagemeter.MaxBuffered),
		strings.Repeat("a", 100),
		// The tail alone would read as a usage chunk if it were joined to the line's start.
		`","usage":{"prompt_tokens":999,"completion_tokens":999}}` + "\n\n",
		"data: {\"choices\":[{\"text\":\"b\"}]}\n\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n",
	}
	for _, c := range chunks {
		m.Write([]byte(c), t0)
	}
	got := m.Finish()
	if got.PromptTokens != 12 || got.OutputTokens != 3 || got.Unmetered != usagemeter.ReasonTooLarge {
		t.Fatalf("got %+v, want the last usage (12, 3) and unmetered %q", got, usagemeter.ReasonTooLarge)
	}
	if budget.InUse() != 0 {
		t.Fatalf("after Finish the budget holds %d bytes", budget.InUse())
	}
}
