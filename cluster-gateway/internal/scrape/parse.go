package scrape

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// Errors returned by Parse.
var (
	// ErrNoFamilies means the page had none of the engine's queue, running or KV families: the pod
	// runs another engine than the one configured, or is not a model server.
	ErrNoFamilies = errors.New("scrape: no known metric families for the engine")
	// ErrLineTooLong means one line exceeded MaxLineBytes.
	ErrLineTooLong = errors.New("scrape: line too long")
)

// MaxLineBytes bounds one line of a metrics page.
const MaxLineBytes = 1 << 20

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// Parse reads a Prometheus text-format page from r and returns the engine's signals. It streams:
// lines of families the engine does not need are skipped after their name is read, so only a few
// lines are parsed. Series of one family are combined: queue, running and prefix counters are
// summed, KV use is averaged, the first cache-config series counts, and for vllm:lora_requests_info
// the series with the highest value (the newest timestamp) wins. NaN and infinite samples are
// ignored. ScrapedAt is left zero for the caller to set.
func Parse(r io.Reader, engine datastore.Engine) (*datastore.Metrics, error) {
	return parse(r, defaultCatalog.familiesFor(engine))
}

// ParseWith is Parse with the families f replaces (see Families).
func ParseWith(r io.Reader, engine datastore.Engine, f Families) (*datastore.Metrics, error) {
	return parse(r, f.catalog().familiesFor(engine))
}

// parse reads a page with the family set fam.
func parse(r io.Reader, fam *familySet) (*datastore.Metrics, error) {
	br := getReader(r)
	defer putReader(br)
	p := parser{fam: fam}
	for lineNo := 1; ; lineNo++ {
		line, err := p.readLine(br)
		if len(line) > 0 {
			if perr := p.line(line); perr != nil {
				return nil, fmt.Errorf("scrape: line %d: %w", lineNo, perr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return p.result()
}

func getReader(r io.Reader) *bufio.Reader {
	if !pooling {
		return bufio.NewReaderSize(r, 16<<10)
	}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	if pooling {
		br.Reset(nil)
		readerPool.Put(br)
	}
}

// parser accumulates one page.
type parser struct {
	fam   *familySet
	sum   [numFields]float64
	count [numFields]int
	long  []byte // holds a line longer than the reader's buffer

	cacheSeen         bool
	blockSize, blocks int

	loraSeen                 bool
	loraTS                   float64
	loraRunning, loraWaiting string
	loraMax                  int
}

// readLine returns the next line, which is valid until the next call.
func (p *parser) readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	p.long = append(p.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		p.long = append(p.long, line...)
		if len(p.long) > MaxLineBytes {
			return nil, ErrLineTooLong
		}
	}
	return p.long, err
}

// line handles one line of the page. Most lines belong to families the engine does not need;
// they are rejected by the name's length before any lookup.
func (p *parser) line(b []byte) error {
	if len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = bytes.TrimLeft(b, " \t")
	}
	if len(b) == 0 || b[0] == '#' || b[0] == '\n' || b[0] == '\r' {
		return nil
	}
	i := nameEnd(b)
	if !p.fam.mayWant(i) {
		return nil
	}
	f := p.fam.names[string(b[:i])]
	switch f {
	case fieldNone:
		return nil
	case fieldSelected:
		return p.selected(b, i, p.fam.selectors[string(b[:i])])
	}
	var lbls []label
	if j := skipSpace(b, i); j < len(b) && b[j] == '{' {
		i = j
		var err error
		if i, lbls, err = parseLabels(b, i, p.keep(f)); err != nil {
			return err
		}
	}
	v, err := parseValue(b[i:])
	if err != nil {
		return err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	p.add(f, v, lbls)
	return nil
}

// selected handles a line of a family that sel splits among fields by its labels.
func (p *parser) selected(b []byte, i int, sel *selection) error {
	var lbls []label
	if j := skipSpace(b, i); j < len(b) && b[j] == '{' {
		var err error
		if i, lbls, err = parseLabels(b, j, sel.keep); err != nil {
			return err
		}
	}
	v, err := parseValue(b[i:])
	if err != nil {
		return err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	for _, s := range sel.selectors {
		if s.matches(lbls) {
			p.add(s.field, v, lbls)
		}
	}
	return nil
}

// loraLabels are the labels read from vllm:lora_requests_info.
var loraLabels = []string{"running_lora_adapters", "waiting_lora_adapters", "max_lora"}

// keep returns the label names to collect for family f.
func (p *parser) keep(f field) []string { return p.fam.keepFor(f) }

// nameEnd returns the index of the byte that ends the metric name ('{', a blank or the line end),
// using vectorised byte searches.
func nameEnd(b []byte) int {
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		i = len(b)
	}
	for _, c := range []byte{' ', '\t', '\r', '\n'} {
		if j := bytes.IndexByte(b[:i], c); j >= 0 {
			i = j
		}
	}
	return i
}

// parseValue parses "value [timestamp]".
func parseValue(b []byte) (float64, error) {
	b = bytes.TrimSpace(b)
	end := bytes.IndexAny(b, " \t")
	if end < 0 {
		end = len(b)
	}
	if end == 0 {
		return 0, errors.New("missing value")
	}
	v, err := strconv.ParseFloat(string(b[:end]), 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", b[:end])
	}
	if ts := bytes.TrimSpace(b[end:]); len(ts) > 0 {
		if _, err := strconv.ParseInt(string(ts), 10, 64); err != nil {
			return 0, fmt.Errorf("bad timestamp %q", ts)
		}
	}
	return v, nil
}

// add folds one sample into the page's totals.
func (p *parser) add(f field, v float64, lbls []label) {
	switch f {
	case fieldCacheConfig:
		if !p.cacheSeen {
			p.blockSize = labelInt(lbls, p.fam.blockSizeLabel)
			p.blocks = labelInt(lbls, p.fam.blocksLabel)
			p.cacheSeen = p.blockSize > 0 && p.blocks > 0
		}
	case fieldLoRA:
		if !p.loraSeen || v > p.loraTS {
			p.loraSeen, p.loraTS = true, v
			p.loraRunning = labelValue(lbls, "running_lora_adapters")
			p.loraWaiting = labelValue(lbls, "waiting_lora_adapters")
			p.loraMax = labelInt(lbls, "max_lora")
		}
	default:
		p.sum[f] += v
		p.count[f]++
	}
}

// result builds the normalised metrics.
func (p *parser) result() (*datastore.Metrics, error) {
	if p.count[fieldWaiting]+p.count[fieldRunning]+p.count[fieldKVUsage]+p.count[fieldKVUsageOld] == 0 {
		return nil, ErrNoFamilies
	}
	m := &datastore.Metrics{
		WaitingQueue: nonNegInt(p.sum[fieldWaiting]),
		Running:      nonNegInt(p.sum[fieldRunning]),
		KVUsage:      p.kvUsage(),
	}
	m.KVBlockSize, m.KVTotalBlocks = p.kvSize()
	if p.loraSeen {
		m.ActiveAdapters = splitList(p.loraRunning)
		m.WaitingAdapters = splitList(p.loraWaiting)
		m.MaxLoRA = p.loraMax
	}
	m.PrefixHits, m.PrefixQueries = p.prefer(
		fieldPrefixHits,
		fieldPrefixHitsOld,
	), p.prefer(
		fieldPrefixQueries,
		fieldPrefixQueriesOld,
	)
	return m, nil
}

// prefer returns the sum of f when seen, else of old.
func (p *parser) prefer(f, old field) float64 {
	if p.count[f] > 0 {
		return p.sum[f]
	}
	return p.sum[old]
}

// kvUsage is the mean KV use over series, from the new name when present, clamped to 0..1.
func (p *parser) kvUsage() float64 {
	f := fieldKVUsage
	if p.count[f] == 0 {
		f = fieldKVUsageOld
	}
	if p.count[f] == 0 {
		return 0
	}
	return min(max(p.sum[f]/float64(p.count[f]), 0), 1)
}

// kvSize returns tokens per block and block count from whichever form the engine exports.
func (p *parser) kvSize() (blockSize, blocks int) {
	switch {
	case p.cacheSeen:
		return p.blockSize, p.blocks
	case p.count[fieldBlockSize] > 0 && p.count[fieldMaxBlocks] > 0:
		return nonNegInt(p.sum[fieldBlockSize] / float64(p.count[fieldBlockSize])), nonNegInt(p.sum[fieldMaxBlocks])
	case p.count[fieldMaxTotalTokens] > 0:
		return 1, nonNegInt(p.sum[fieldMaxTotalTokens])
	}
	return 0, 0
}

// nonNegInt rounds v to an int, clamping negatives and huge values.
func nonNegInt(v float64) int {
	if !(v > 0) {
		return 0
	}
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Round(v))
}

// splitList splits a comma-separated label value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
