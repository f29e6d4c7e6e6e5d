package openai

import (
	"strings"
	"testing"
	"time"
)

// TestInputItemsCostLinearTime is the defence against a Responses API body that makes Parse copy
// its prompt once per input item: one long string followed by many small items that are not
// messages (each adds its content, then takes it back). This body of 35 MB (400,000 items)
// cost the quadratic reading 6.7·10^12 bytes of copying, minutes of a core (a body within the
// router's 32 MiB limit, where MaxPrompt is 0, costs as much); read in linear time it takes
// milliseconds, so the generous bound below is missed by the quadratic reading only, never by a
// slow machine. The prompt is the string alone, at any MaxPrompt.
func TestInputItemsCostLinearTime(t *testing.T) {
	long := strings.Repeat("a", 16<<20)
	body := []byte(`{"model":"m","input":["` + long + `"` +
		strings.Repeat(
			`,{"type":"function_call_output","content":"b"},{"content":[{"text":"c"}],"type":"reasoning"}`,
			200_000,
		) + `]}`)
	for _, maxPrompt := range []int{0, 256 << 10} {
		done := make(chan error, 1)
		b := Body{MaxPrompt: maxPrompt}
		go func() { done <- Parse(body, &b) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatalf(
				"MaxPrompt %d: Parse of %d bytes still running after a minute (quadratic in the input items)",
				maxPrompt,
				len(body),
			)
		}
		want := long
		if maxPrompt > 0 {
			want = long[:maxPrompt]
		}
		if string(b.Prompt) != want || b.PromptBytes != len(long) {
			t.Fatalf(
				"MaxPrompt %d: prompt of %d bytes (%d counted), want the string's %d",
				maxPrompt,
				len(b.Prompt),
				b.PromptBytes,
				len(want),
			)
		}
	}
}

// BenchmarkParseManyInputItems prices a body of many small items after a long string.
func BenchmarkParseManyInputItems(b *testing.B) {
	body := []byte(`{"model":"m","input":["` + strings.Repeat("a", 1<<20) + `"` +
		strings.Repeat(`,{"type":"reasoning","content":"b"}`, 10_000) + `]}`)
	var out Body
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := Parse(body, &out); err != nil {
			b.Fatal(err)
		}
	}
}
