package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws the sweep's progress bar on stderr: cells done of the total, and an ETA from
// the mean time of the cells measured so far (resumed cells cost nothing and do not count).
type progress struct {
	w           io.Writer
	now         func() time.Time
	start       time.Time
	total, done int
	measured    int
	resumes     int
	spent       time.Duration
}

// barWidth is the bar's width in characters.
const barWidth = 30

func newProgress(w io.Writer, total int, now func() time.Time) *progress {
	return &progress{w: w, now: now, start: now(), total: total}
}

// starting announces the cell about to run.
func (p *progress) starting(label string) { p.print("running " + label) }

// resumed counts a cell read back from its results file.
func (p *progress) resumed(label string) {
	p.done++
	p.resumes++
	p.print("resumed " + label)
}

// ran counts a measured cell that took d.
func (p *progress) ran(d time.Duration) {
	p.done++
	p.measured++
	p.spent += d
}

// finish prints the final line.
func (p *progress) finish() { p.print("done") }

func (p *progress) print(what string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "%s · %s\n", p.line(), what)
}

// line renders "sweep [#####-----] 7/20 cells (2 resumed) · elapsed 4m10s · ETA 9m45s".
func (p *progress) line() string {
	filled := 0
	if p.total > 0 {
		filled = barWidth * p.done / p.total
	}
	var b strings.Builder
	fmt.Fprintf(
		&b,
		"sweep [%s%s] %d/%d cells",
		strings.Repeat("#", filled),
		strings.Repeat("-", barWidth-filled),
		p.done,
		p.total,
	)
	if p.resumes > 0 {
		fmt.Fprintf(&b, " (%d resumed)", p.resumes)
	}
	fmt.Fprintf(&b, " · elapsed %s · ETA %s", p.now().Sub(p.start).Round(time.Second), p.eta())
	return b.String()
}

// eta is the mean measured cell's time × the cells left ("?" before any cell was measured).
func (p *progress) eta() string {
	left := p.total - p.done
	switch {
	case left == 0:
		return "0s"
	case p.measured == 0:
		return "?"
	}
	mean := p.spent / time.Duration(p.measured)
	return (mean * time.Duration(left)).Round(time.Second).String()
}
