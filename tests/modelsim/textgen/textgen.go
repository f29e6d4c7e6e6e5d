// Package textgen is modelsim's stand-in for a tokenizer and a language model: it counts tokens
// from text (about four characters a token), renders chat messages with a simple template, and
// produces deterministic output text from a seed.
package textgen

import (
	"encoding/binary"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// CharsPerToken is the number of characters of text counted as one token.
const CharsPerToken = 4

// CountTokens returns the number of tokens of text: ceil(len/4), at least 1 for non-empty text.
func CountTokens(text string) int {
	return (len(text) + CharsPerToken - 1) / CharsPerToken
}

// Tokenize returns the token ids of text, as modelsim's /tokenize answers: one token per
// CharsPerToken bytes (the last one padded with zeros), its id the bytes read as a big-endian
// number, so CountTokens(text) == len(Tokenize(text)) and equal text gives equal ids. A block of
// 16 tokens is exactly a 64-byte block of the text.
func Tokenize(text string) []int64 {
	return AppendTokens(make([]int64, 0, CountTokens(text)), text)
}

// AppendTokens appends the token ids of text (Tokenize) to dst.
func AppendTokens(dst []int64, text string) []int64 {
	for i := 0; i < len(text); i += CharsPerToken {
		var b [CharsPerToken]byte
		copy(b[:], text[i:])
		dst = append(dst, int64(binary.BigEndian.Uint32(b[:])))
	}
	return dst
}

// Message is one chat message: a role and its text content.
type Message struct {
	Role    string
	Content string
}

// RenderChat renders messages with a simple template, one block per message, ending with the
// assistant's turn:
//
//	<|role|>\ncontent\n ... <|assistant|>\n
func RenderChat(msgs []Message) string {
	var b strings.Builder
	n := 16
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 6
	}
	b.Grow(n)
	for _, m := range msgs {
		b.WriteString("<|")
		b.WriteString(m.Role)
		b.WriteString("|>\n")
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	b.WriteString("<|assistant|>\n")
	return b.String()
}

// vocabulary holds the output tokens: four characters each (a space and a three-letter word),
// plain ASCII that needs no JSON escaping.
var vocabulary = func() []string {
	words := strings.Fields("the and for you can not are was but all new one two use may way set " +
		"run get see its our out day now how any own say too end key map log api gpu hit row sum " +
		"job net bit box cap mix fit pod tag law art sky sea sun air red big old far low top")
	for i, w := range words {
		words[i] = " " + w
	}
	return words
}()

// Generator produces the output tokens of one request, a pure function of (seed, key, index).
type Generator struct {
	key uint64
}

// NewGenerator returns the generator for a request: the same seed and prompt give the same text.
func NewGenerator(seed uint64, prompt string) Generator {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], seed)
	d := xxhash.New()
	_, _ = d.Write(buf[:])
	_, _ = d.WriteString(prompt)
	return Generator{key: d.Sum64()}
}

// Token returns the text of output token i.
func (g Generator) Token(i int) string {
	return vocabulary[g.mix(i)%uint64(len(vocabulary))]
}

// Float returns a deterministic number in [-1, 1) for index i (embedding components).
func (g Generator) Float(i int) float64 {
	return float64(g.mix(i)>>11)/(1<<52) - 1
}

func (g Generator) mix(i int) uint64 {
	x := g.key + uint64(i)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return x
}

// AppendText appends the text of tokens [from, to) to dst.
func (g Generator) AppendText(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, g.Token(i)...)
	}
	return dst
}

// Length draws the natural length of an answer (where the simulated model emits end-of-sequence)
// in [lo, hi] from the generator's key.
func (g Generator) Length(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	x := g.key * 0xd6e8feb86659fd93
	x ^= x >> 32
	return lo + int(x%uint64(hi-lo+1))
}
