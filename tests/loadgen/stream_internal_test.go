package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"
)

// benchStream is a 200-token chat stream with usage, as vLLM sends it.
var benchStream = func() string {
	var b strings.Builder
	for range 200 {
		b.WriteString(
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}` + "\n\n",
		)
	}
	b.WriteString(
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":200,"prompt_tokens_details":{"cached_tokens":512}}}` + "\n\n",
	)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}()

func TestReadStreamCounts(t *testing.T) {
	var s Sample
	readStream(context.Background(), strings.NewReader(benchStream), time.Now(), &s)
	if !s.OK() || s.OutputTokens != 200 || len(s.ITLs) != 199 || s.CachedTokens != 512 || s.PromptTokens != 1000 {
		t.Fatalf("sample %+v", s)
	}
}

// BenchmarkReadStream is the client's per-response work: SSE framing, chunk decoding and timing of
// a 200-token stream.
func BenchmarkReadStream(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchStream)))
	for b.Loop() {
		var s Sample
		readStream(context.Background(), strings.NewReader(benchStream), time.Now(), &s)
		if s.OutputTokens != 200 {
			b.Fatal(s.Error, s.ErrorMessage)
		}
	}
}
