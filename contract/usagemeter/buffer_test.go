package usagemeter_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"
)

// feed writes in to b in writes of step bytes and returns the lines b handed over.
func feed(b *usagemeter.Buffer, in string, step int) []string {
	var lines []string
	for len(in) > 0 {
		n := min(step, len(in))
		b.Write([]byte(in[:n]), func(l []byte) { lines = append(lines, string(l)) })
		in = in[n:]
	}
	return lines
}

// TestLines: SSE lines come whole whatever the writes' sizes, '\r' kept; a line over
// MaxBuffered that spans writes is skipped whole (its tail is never read as a line of its own)
// and counted too_large, and the lines after it are read. (A line whole in one write is handed
// over from the write, whatever its length: nothing is buffered.)
func TestLines(t *testing.T) {
	long := "data: " + strings.Repeat("a", usagemeter.MaxBuffered)
	tests := []struct {
		name      string
		in        string
		want      []string
		unmetered string
	}{
		{"lines", "data: 1\n\ndata: 2\n", []string{"data: 1", "", "data: 2"}, ""},
		{"CRLF", "data: 1\r\n\r\n", []string{"data: 1\r", "\r"}, ""},
		{"unterminated line withheld", "data: 1\ndata: 2", []string{"data: 1"}, ""},
		{
			"overlong line skipped whole",
			"data: 1\n" + long + `,"usage":{"prompt_tokens":9}}` + "\ndata: 2\n",
			[]string{"data: 1", "data: 2"},
			usagemeter.ReasonTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := []int{1, 2, 3, 7, 64, len(tt.in)}
			if len(tt.in) > 1<<16 {
				steps = []int{4096, 1 << 19}
			}
			for _, step := range steps {
				budget := body.NewBudget(8 << 20)
				var b usagemeter.Buffer
				b.Reset(true, budget)
				got := feed(&b, tt.in, step)
				if strings.Join(got, "|") != strings.Join(tt.want, "|") {
					t.Fatalf("writes of %d: lines %.200q, want %q", step, got, tt.want)
				}
				if b.Unmetered() != tt.unmetered {
					t.Fatalf("writes of %d: unmetered %q, want %q", step, b.Unmetered(), tt.unmetered)
				}
				if _, ok := b.Usage(); ok {
					t.Fatal("an SSE buffer reported a JSON body's usage")
				}
				b.Release()
				if in := budget.InUse(); in != 0 {
					t.Fatalf("writes of %d: %d bytes still reserved after Release", step, in)
				}
			}
		})
	}
}

// TestBodyBudget: a JSON body is held reserved from the budget and its usage read; one the budget
// cannot hold, or one over MaxBuffered, is skipped (no usage) with its reason, and Release
// (or Reset) gives everything back.
func TestBodyBudget(t *testing.T) {
	usage := `],"usage":{"prompt_tokens":4,"completion_tokens":2}}`
	pad := func(n int) string { return `{"choices":[` + strings.Repeat(" ", n) }
	tests := []struct {
		name      string
		budget    int64
		free      int64 // budget bytes free once other requests hold the rest
		chunks    []string
		prompt    int
		unmetered string
	}{
		{"fits", 1 << 20, 1 << 20, []string{pad(100 << 10), usage}, 4, ""},
		{"budget spent", 1 << 20, 64 << 10, []string{pad(100 << 10), usage}, 0, usagemeter.ReasonBudget},
		{
			"too large",
			4 << 20,
			4 << 20,
			[]string{pad(usagemeter.MaxBuffered - 100), strings.Repeat(" ", 200), usage},
			0,
			usagemeter.ReasonTooLarge,
		},
		{"no usage", 1 << 20, 1 << 20, []string{`{"choices":[]}`}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := body.NewBudget(tt.budget)
			if err := budget.Reserve(tt.budget - tt.free); err != nil {
				t.Fatal(err)
			}
			var b usagemeter.Buffer
			b.Reset(false, budget)
			var peak int64
			for _, c := range tt.chunks {
				b.Write([]byte(c), func([]byte) { t.Fatal("a JSON body handed over a line") })
				peak = max(peak, budget.InUse())
			}
			if peak > tt.budget {
				t.Fatalf("budget in use %d past its %d", peak, tt.budget)
			}
			if tt.unmetered == "" && peak == tt.budget-tt.free {
				t.Fatal("the buffered body was not charged to the budget")
			}
			u, ok := b.Usage()
			if ok != (tt.prompt > 0) || u.PromptTokens != tt.prompt || b.Unmetered() != tt.unmetered {
				t.Fatalf("usage %+v (%v), unmetered %q; want %d prompt tokens, %q", u, ok, b.Unmetered(), tt.prompt,
					tt.unmetered)
			}
			b.Reset(true, budget) // Reset gives back too
			if in := budget.InUse(); in != tt.budget-tt.free {
				t.Fatalf("after Reset the budget holds %d bytes, want the others' %d", in, tt.budget-tt.free)
			}
		})
	}
}

func TestReason(t *testing.T) {
	if r := usagemeter.Reason(body.ErrBudgetExhausted); r != usagemeter.ReasonBudget {
		t.Fatalf("Reason(budget) = %q", r)
	}
	if r := usagemeter.Reason(body.ErrTooLarge); r != usagemeter.ReasonTooLarge {
		t.Fatalf("Reason(too large) = %q", r)
	}
}

// FuzzBuffer writes arbitrary bytes, split at an arbitrary point: the lines handed over are
// exactly the input's complete lines that fit, whatever the split; the budget is given back.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n"), 3, true)
	f.Add([]byte(`{"usage":{"completion_tokens":2}}`), 5, false)
	f.Add([]byte("a\r\n\nb"), 0, true)
	f.Fuzz(func(t *testing.T, data []byte, split int, sse bool) {
		budget := body.NewBudget(4 << 20)
		var b usagemeter.Buffer
		b.Reset(sse, budget)
		split = min(max(split, 0), len(data))
		var got [][]byte
		keep := func(l []byte) { got = append(got, bytes.Clone(l)) }
		b.Write(data[:split], keep)
		b.Write(data[split:], keep)
		if sse {
			want := bytes.Split(data, []byte("\n"))
			want = want[:len(want)-1] // the unterminated rest is withheld
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
				}
			}
		} else {
			_, _ = b.Usage()
		}
		b.Release()
		if in := budget.InUse(); in != 0 {
			t.Fatalf("%d bytes reserved after Release", in)
		}
	})
}

// BenchmarkLines reads a stream of small SSE events, written as they come, from the budget.
func BenchmarkLines(b *testing.B) {
	event := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token\"}}]}\n\n")
	budget := body.NewBudget(1 << 30)
	var buf usagemeter.Buffer
	n := 0
	b.SetBytes(int64(len(event)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset(true, budget)
		buf.Write(event[:20], func([]byte) { n++ })
		buf.Write(event[20:], func([]byte) { n++ })
	}
	buf.Release()
	if n == 0 {
		b.Fatal("no lines")
	}
}
