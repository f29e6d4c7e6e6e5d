package workload

import (
	"math"
	"math/rand/v2"
	"strings"
)

// vocabulary is the word list prompts are made of: plain lowercase words of mixed length, so text
// tokenises like prose (about CharsPerToken characters a token).
var vocabulary = strings.Fields(`the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there been one all we their has would when if so no will
what can more out up into do time some could them other than then now only its over also new after first
two way may down should because each just those people how too any these most through long where much
before right good very still own work life world between same another while last might great old year
system model request token cache queue region cluster router gateway server prompt answer latency memory
kernel matrix vector tensor batch stream schedule budget signal measure compute decode prefill adapter`)

// corpus is a fixed stretch of prose that prompts are cut from; wordStarts indexes its words.
var corpus, wordStarts = buildCorpus(1 << 16)

// segment is how many bytes of the corpus are copied at a time.
const segment = 256

func buildCorpus(n int) (string, []int) {
	rng := rand.New(rand.NewPCG(0x5eed, 0xc0de))
	var b strings.Builder
	starts := make([]int, 0, n/5)
	for b.Len() < n+segment {
		starts = append(starts, b.Len())
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
		b.WriteByte(' ')
	}
	return b.String(), starts[:len(starts)-segment/4]
}

// writeText appends exactly n bytes of deterministic prose drawn from rng to b: segments of the
// corpus, each starting at a word chosen by rng.
func writeText(b *strings.Builder, rng *rand.Rand, n int) {
	b.Grow(n)
	for n > 0 {
		start := wordStarts[rng.IntN(len(wordStarts))]
		k := min(n, segment)
		b.WriteString(corpus[start : start+k])
		n -= k
	}
}

// text returns n bytes of deterministic prose.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	writeText(&b, rng, n)
	return b.String()
}

// draw returns a token count from d.
func (d *Dist) draw(rng *rand.Rand) int {
	switch d.Kind {
	case "fixed":
		return d.Value
	case "uniform":
		return d.Min + rng.IntN(d.Max-d.Min+1)
	}
	mu := math.Log(d.Mean) - d.Sigma*d.Sigma/2
	n := int(math.Round(math.Exp(mu + d.Sigma*rng.NormFloat64())))
	n = max(n, d.Min)
	if d.Max > 0 {
		n = min(n, d.Max)
	}
	return n
}
