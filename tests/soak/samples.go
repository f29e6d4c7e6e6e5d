package soak

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// samplesHeader is the first line WriteSamples writes and ReadSamples expects.
var samplesHeader = []string{"process", "seconds", "heap_inuse_bytes", "goroutines"}

// ReadSamples reads the CSV that WriteSamples (`soak --samples=FILE`) wrote back into processes,
// in the order they first appear, each with its points in time order. It names the line of the
// first bad record.
func ReadSamples(r io.Reader) ([]*Process, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(samplesHeader)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("soak: samples: header: %w", err)
	}
	if !slices.Equal(head, samplesHeader) {
		return nil, fmt.Errorf("soak: samples: header %q, want %q", head, samplesHeader)
	}
	var procs []*Process
	byName := map[string]*Process{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("soak: samples: %w", err)
		}
		line, _ := cr.FieldPos(0)
		var vals [3]float64
		for i, f := range rec[1:] {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("soak: samples: line %d: %s %q is not a number >= 0", line, samplesHeader[i+1], f)
			}
			vals[i] = v
		}
		if rec[0] == "" || vals[0] > float64(math.MaxInt64/int64(time.Second)) {
			return nil, fmt.Errorf("soak: samples: line %d: bad process name or time", line)
		}
		p := byName[rec[0]]
		if p == nil {
			p = &Process{Name: rec[0]}
			byName[rec[0]] = p
			procs = append(procs, p)
		}
		at := time.Duration(vals[0] * float64(time.Second))
		if n := len(p.Points); n > 0 && at < p.Points[n-1].At {
			return nil, fmt.Errorf("soak: samples: line %d: %s goes back in time", line, p.Name)
		}
		p.Points = append(p.Points, Point{At: at, HeapBytes: vals[1], Goroutines: vals[2]})
	}
	if len(procs) == 0 {
		return nil, errors.New("soak: samples: no samples")
	}
	return procs, nil
}

// Rejudge judges saved samples again with cfg's warm-up and tolerances (a long run's samples with
// a longer warm-up, say). The report has no request counts; it passes when every resource of
// every process is within its tolerance.
func Rejudge(cfg Config, procs []*Process) (*Report, error) {
	r := &Report{Processes: procs, Rejudged: true}
	return r, r.judge(cfg)
}
