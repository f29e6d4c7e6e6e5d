package sse_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/sse"
)

func readAll(t testing.TB, in string) ([]sse.Event, error) {
	t.Helper()
	r := sse.NewReader(strings.NewReader(in))
	var out []sse.Event
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		name    string
		in      string
		want    []sse.Event
		wantErr error
	}{
		{"two events", "data: a\n\ndata: b\n\n", []sse.Event{{Data: []byte("a")}, {Data: []byte("b")}}, nil},
		{"crlf and no space", "data:a\r\n\r\n", []sse.Event{{Data: []byte("a")}}, nil},
		{"multi-line data", "data: a\ndata: b\n\n", []sse.Event{{Data: []byte("a\nb")}}, nil},
		{
			"comments and named event",
			": keep-alive\n\nevent: error\ndata: {}\n\n",
			[]sse.Event{{Name: "error", Data: []byte("{}")}},
			nil,
		},
		{"unknown fields ignored", "id: 1\nretry: 5\ndata: x\n\n", []sse.Event{{Data: []byte("x")}}, nil},
		{
			"last event without blank line",
			"data: a\n\ndata: [DONE]\n",
			[]sse.Event{{Data: []byte("a")}, {Data: []byte("[DONE]")}},
			nil,
		},
		{"cut inside a line", "data: a\n\ndata: {\"cho", []sse.Event{{Data: []byte("a")}}, io.ErrUnexpectedEOF},
		{"line longer than the buffer", "data: " + long + "\n\n", []sse.Event{{Data: []byte(long)}}, nil},
		{"empty", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReaderEventTooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("y", sse.MaxEventBytes+10) + "\n\n"
	if _, err := readAll(t, in); !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
}

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    sse.Chunk
		wantErr bool
	}{
		{"done", "[DONE]", sse.Chunk{Done: true}, false},
		{"chat delta", `{"choices":[{"index":0,"delta":{"content":"Hello"}}]}`, sse.Chunk{ContentBytes: 5}, false},
		{"chat role only", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, sse.Chunk{}, false},
		{
			"completion text",
			`{"choices":[{"index":0,"text":" wor","finish_reason":null}]}`,
			sse.Chunk{ContentBytes: 4},
			false,
		},
		{
			"usage with cache",
			`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}`,
			sse.Chunk{Usage: &sse.Usage{PromptTokens: 100, CompletionTokens: 7, CachedTokens: 64}},
			false,
		},
		{
			"usage without details",
			`{"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
			sse.Chunk{Usage: &sse.Usage{PromptTokens: 3, CompletionTokens: 2}},
			false,
		},
		{
			"openai error",
			`{"error":{"message":"boom","type":"server_error"}}`,
			sse.Chunk{Err: &sse.APIError{Message: "boom", Type: "server_error"}},
			false,
		},
		{
			"vllm error",
			`{"object":"error","message":"oom","type":"InternalServerError","code":500}`,
			sse.Chunk{Err: &sse.APIError{Message: "oom", Type: "InternalServerError"}},
			false,
		},
		{
			"non-streamed response",
			`{"choices":[{"message":{"role":"assistant","content":"abc"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			sse.Chunk{ContentBytes: 3, Usage: &sse.Usage{PromptTokens: 1, CompletionTokens: 1}},
			false,
		},
		{"not json", `{"choices":`, sse.Chunk{}, true},
		{"wrong type", `{"choices":"x"}`, sse.Chunk{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sse.ParseChunk([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("chunk = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	f.Add("event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n")
	f.Add(": c\r\ndata:{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":1}}}\r\n\r\n")
	f.Add("data: a\ndata")
	f.Add("data: {}}\n\ndata: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {} {}\n\ndata: {\"object\":\"error\"}\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := sse.NewReader(strings.NewReader(in))
		var dec sse.ChunkDecoder
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if i > len(in) || len(ev.Data) > len(in) {
				t.Fatalf("event %d of %d bytes from %d input bytes", i, len(ev.Data), len(in))
			}
			c, err := sse.ParseChunk(ev.Data)
			if err == nil && (c.ContentBytes < 0 || c.ContentBytes > len(in)) {
				t.Fatalf("content bytes %d from %d input bytes", c.ContentBytes, len(in))
			}
			c2, err2 := dec.Decode(ev.Data)
			if (err == nil) != (err2 == nil) || !reflect.DeepEqual(c, c2) {
				t.Fatalf("event %q: ParseChunk %+v, %v; ChunkDecoder %+v, %v", ev.Data, c, err, c2, err2)
			}
		}
	})
}

// benchStream is a typical 200-token chat stream with usage.
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

func BenchmarkStream200Tokens(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchStream)))
	for b.Loop() {
		r := sse.NewReader(strings.NewReader(benchStream))
		var dec sse.ChunkDecoder
		n := 0
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			c, err := dec.Decode(ev.Data)
			if err != nil {
				b.Fatal(err)
			}
			n += c.ContentBytes
		}
		if n != 1200 {
			b.Fatalf("content %d", n)
		}
	}
}

func BenchmarkParseChunk(b *testing.B) {
	data := []byte(
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`,
	)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sse.ParseChunk(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChunkDecoder(b *testing.B) {
	data := []byte(
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.1-8b","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`,
	)
	var d sse.ChunkDecoder
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzChunkDecoder checks that a reused ChunkDecoder agrees with ParseChunk on any two chunks in a row.
func FuzzChunkDecoder(f *testing.F) {
	f.Add(
		`{"choices":[{"delta":{"content":"a\"b"}}]}`,
		`{"usage":{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}}`,
	)
	f.Add(`{"error":{"message":"x","type":"y"}}`, `[DONE]`)
	f.Add(`{"object":"error","message":"m"} `, `{}}`)
	f.Add(`{"choices":[{"text":null},{"text":"xy"}]}`, `{"choices":[{"text":1}]}`)
	f.Add(`{"choices":`, `{"choices":[]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var dec sse.ChunkDecoder
		for _, data := range []string{a, b, a} {
			want, werr := sse.ParseChunk([]byte(data))
			got, gerr := dec.Decode([]byte(data))
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) {
				t.Fatalf("%q: ParseChunk %+v, %v; ChunkDecoder %+v, %v", data, want, werr, got, gerr)
			}
		}
	})
}

func TestChunkDecoderReuse(t *testing.T) {
	steps := []struct {
		in      string
		want    sse.Chunk
		wantErr bool
	}{
		{`{"choices":[{"text":"abc"},{"delta":{"content":"de"}}]}`, sse.Chunk{ContentBytes: 5}, false},
		{`{"choices":[{"index":0},{"index":1}]}`, sse.Chunk{}, false}, // old elements must not leak
		{`{"choices":[{"text":"x"}]} {"choices":[]}`, sse.Chunk{}, true},
		{`{"choices":[{"text":"x"}]}`, sse.Chunk{ContentBytes: 1}, false}, // recovers after an error
		{`{"choices":[{"text":"x"`, sse.Chunk{}, true},
		{
			`{"usage":{"prompt_tokens":9,"completion_tokens":1}}`,
			sse.Chunk{Usage: &sse.Usage{PromptTokens: 9, CompletionTokens: 1}},
			false,
		},
		{`{"choices":[]}`, sse.Chunk{}, false}, // usage must not leak either
		{"[DONE]", sse.Chunk{Done: true}, false},
	}
	var dec sse.ChunkDecoder
	for i, s := range steps {
		got, err := dec.Decode([]byte(s.in))
		if (err != nil) != s.wantErr || !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d %q: %+v, %v; want %+v, error %v", i, s.in, got, err, s.want, s.wantErr)
		}
	}
}
