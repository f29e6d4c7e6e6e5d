package bench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// samplesHeader names the columns of NAME-samples.csv.
const samplesHeader = "target,index,client_region,scheduled_ms,sent_ms,ttft_ms,e2e_ms,prompt_tokens,cached_tokens," +
	"output_tokens,status,error,cluster,served_region,route,endpoint"

// writeSamples writes every request of every target as one CSV row, so that a run's figures
// can be re-analysed (by arrival time, by where a request was served) without running it again.
// Times are in milliseconds of real time from the start of the run; a failed request has no TTFT.
func writeSamples(path string, lres *loadgen.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(strings.Split(samplesHeader, ","))
	for _, t := range lres.Targets {
		for i := range t.Samples {
			_ = w.Write(sampleRow(t.Name, &t.Samples[i])) // an error shows at Flush
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("bench: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

func sampleRow(target string, s *loadgen.Sample) []string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) }
	ttft := ""
	if s.OK() {
		ttft = ms(s.TTFT)
	}
	return []string{target, strconv.Itoa(s.Index), s.Region, ms(s.Scheduled), ms(s.Sent), ttft, ms(s.E2E),
		strconv.Itoa(s.PromptTokens), strconv.Itoa(s.CachedTokens), strconv.Itoa(s.OutputTokens),
		strconv.Itoa(s.Status), string(s.Error), s.Cluster, s.ServedRegion, s.Route, s.Endpoint}
}

// Sample is one row of a samples file, as ReadSamples reads it back.
type Sample struct {
	Target string
	Index  int
	// ClientRegion is the region of the client that sent the request (empty in Tier 1 runs).
	ClientRegion string
	// Scheduled and Sent are real time from the start of the run; TTFT (0 when not OK) and E2E
	// are from Sent.
	Scheduled, Sent, TTFT, E2E time.Duration
	// OK is true when the request was answered with a first token (the TTFT column is set).
	OK                                               bool
	PromptTokens, CachedTokens, OutputTokens, Status int
	Error, Cluster, ServedRegion, Route, Endpoint    string
}

// ReadSamples reads a samples file written by a benchmark run (NAME-samples.csv). A file whose
// header is not the one this version writes, or a row with a malformed number, is an error
// naming the line and column.
func ReadSamples(r io.Reader) ([]Sample, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("bench: samples: reading the header: %w", err)
	}
	if got := strings.Join(header, ","); got != samplesHeader {
		return nil, fmt.Errorf("bench: samples: header %q, want %q", got, samplesHeader)
	}
	var out []Sample
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bench: samples: %w", err)
		}
		line, _ := cr.FieldPos(0)
		s, err := parseSample(row)
		if err != nil {
			return nil, fmt.Errorf("bench: samples line %d: %w", line, err)
		}
		out = append(out, s)
	}
}

// parseSample parses one row in samplesHeader's column order (csv checked its length).
func parseSample(row []string) (Sample, error) {
	s := Sample{Target: row[0], ClientRegion: row[2], Error: row[11], Cluster: row[12], ServedRegion: row[13],
		Route: row[14], Endpoint: row[15]}
	var err error
	num := func(col int, dst *int) {
		if err == nil {
			if *dst, err = strconv.Atoi(row[col]); err != nil {
				err = fmt.Errorf("column %s: %q is not a whole number", columnName(col), row[col])
			}
		}
	}
	dur := func(col int, dst *time.Duration) {
		if err != nil {
			return
		}
		v, perr := strconv.ParseFloat(row[col], 64)
		if perr != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			err = fmt.Errorf("column %s: %q is not a time in milliseconds", columnName(col), row[col])
			return
		}
		*dst = time.Duration(math.Round(v * float64(time.Millisecond)))
	}
	num(1, &s.Index)
	dur(3, &s.Scheduled)
	dur(4, &s.Sent)
	if s.OK = row[5] != ""; s.OK {
		dur(5, &s.TTFT)
	}
	dur(6, &s.E2E)
	num(7, &s.PromptTokens)
	num(8, &s.CachedTokens)
	num(9, &s.OutputTokens)
	num(10, &s.Status)
	return s, err
}

// columnName is the name of samplesHeader's column col.
func columnName(col int) string { return strings.Split(samplesHeader, ",")[col] }
