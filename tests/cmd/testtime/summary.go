package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json`: a test2json TestEvent, or a build event (build-output,
// build-fail) of `go build -json`, which go test -json interleaves.
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string
}

// pkg is what has been read of one package's test run.
type pkg struct {
	name    string
	outputs []event           // its output events, in order
	results map[string]string // test name → pass, fail or skip
	elapsed map[string]float64
	result  string // pass, fail or skip once the package has finished; "" while it runs
	total   float64
	summary string // go test's result line ("ok  \tpkg\t1.2s"), without its newline
}

// slowest returns the package's slowest top-level test and its time.
func (p *pkg) slowest() (string, float64) {
	var name string
	var worst float64
	for t, e := range p.elapsed {
		if strings.Contains(t, "/") {
			continue
		}
		if e > worst || (e == worst && t < name) {
			name, worst = t, e
		}
	}
	return name, worst
}

// summarizer turns the event stream into go test's plain output and the timing table.
type summarizer struct {
	out      io.Writer
	progress io.Writer // one line per finished package while the run goes on; nil for none
	pkgs     map[string]*pkg
	order    []*pkg // finished packages, in the order go test reported them
	first    time.Time
	last     time.Time
	failed   bool
}

func newSummarizer(out, progress io.Writer) *summarizer {
	return &summarizer{out: out, progress: progress, pkgs: map[string]*pkg{}}
}

// line handles one line of input. Lines that are not JSON events (go test writes a few, such as a
// final "FAIL" when a package fails to build) pass through unchanged.
func (s *summarizer) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		if strings.TrimSpace(string(b)) == "FAIL" {
			s.failed = true // go test's own closing line; written again at the end
			return
		}
		fmt.Fprintf(s.out, "%s\n", b)
		return
	}
	if !e.Time.IsZero() {
		if s.first.IsZero() || e.Time.Before(s.first) {
			s.first = e.Time
		}
		if e.Time.After(s.last) {
			s.last = e.Time
		}
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output) // compiler errors: shown at once, as go test does
	case e.Action == "build-fail":
		s.failed = true
	case e.Package == "":
	case e.Action == "start":
		s.pkg(e.Package)
	case e.Action == "output":
		p := s.pkg(e.Package)
		p.outputs = append(p.outputs, e)
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		p := s.pkg(e.Package)
		if e.Test != "" {
			p.results[e.Test] = e.Action
			p.elapsed[e.Test] = e.Elapsed
			return
		}
		s.finish(p, e)
	}
}

func (s *summarizer) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name, results: map[string]string{}, elapsed: map[string]float64{}}
		s.pkgs[name] = p
	}
	return p
}

// finish records a package's result and writes what go test would have written for it.
func (s *summarizer) finish(p *pkg, e event) {
	p.result, p.total = e.Action, e.Elapsed
	for i := len(p.outputs) - 1; i >= 0; i-- {
		if o := p.outputs[i]; o.Test == "" && strings.TrimSpace(o.Output) != "" {
			p.summary = strings.TrimRight(o.Output, "\n")
			break
		}
	}
	if p.summary == "" {
		p.summary = fmt.Sprintf("%s\t%s", strings.ToUpper(e.Action), p.name)
	}
	s.order = append(s.order, p)
	if p.result == "fail" {
		s.failed = true
		s.writeFailure(p, "")
	}
	if s.progress != nil {
		fmt.Fprintln(s.progress, p.summary)
	}
}

// writeFailure writes a failed (or unfinished) package's output: everything it printed outside a
// test, and the whole output of each test that failed or never finished. Passing tests stay quiet,
// as in plain go test.
func (s *summarizer) writeFailure(p *pkg, note string) {
	var b strings.Builder
	for _, o := range p.outputs {
		if o.Test == "" {
			if o.Output != "PASS\n" && strings.TrimRight(o.Output, "\n") != p.summary {
				b.WriteString(o.Output)
			}
			continue
		}
		if r := p.results[o.Test]; r == "fail" || r == "" {
			b.WriteString(o.Output)
		}
	}
	if b.Len() > 0 || note != "" {
		fmt.Fprintf(s.out, "# %s%s\n%s", p.name, note, b.String())
	}
}

// end writes the packages that never finished, the timing table and go test's result lines. It
// reports whether everything passed.
func (s *summarizer) end() bool {
	var unfinished []string
	for name, p := range s.pkgs {
		if p.result == "" {
			unfinished = append(unfinished, name)
		}
	}
	slices.Sort(unfinished)
	for _, name := range unfinished {
		p := s.pkgs[name]
		s.writeFailure(p, ": the test run ended before the package finished")
		p.result, p.summary = "fail", "FAIL\t"+name+"\t[unfinished]"
		s.order = append(s.order, p)
		s.failed = true
	}
	s.writeTable()
	for _, p := range s.order {
		fmt.Fprintln(s.out, p.summary)
	}
	if s.failed {
		fmt.Fprintln(s.out, "FAIL")
	}
	return !s.failed
}

// writeTable writes the time each package's tests ran, slowest first. Packages without tests are
// left out; cached results show the time of the run that was cached.
func (s *summarizer) writeTable() {
	var ran []*pkg
	var sum float64
	for _, p := range s.order {
		if p.result == "skip" && len(p.results) == 0 {
			continue
		}
		ran = append(ran, p)
		sum += p.total
	}
	if len(ran) == 0 {
		return
	}
	slices.SortStableFunc(ran, func(a, b *pkg) int {
		switch {
		case a.total > b.total:
			return -1
		case a.total < b.total:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	prefix := commonPrefix(ran)
	width := 0
	for _, p := range ran {
		width = max(width, len(p.name)-len(prefix))
	}
	fmt.Fprintf(s.out, "\ntime per package, slowest first (%d packages, %.1fs of tests", len(ran), sum)
	if !s.first.IsZero() && s.last.After(s.first) {
		fmt.Fprintf(s.out, ", %.1fs from the first package's start to the last one's end", s.last.Sub(s.first).Seconds())
	}
	fmt.Fprintln(s.out, "):")
	for _, p := range ran {
		mark := "    "
		if p.result == "fail" {
			mark = "FAIL"
		}
		name := strings.TrimPrefix(p.name, prefix)
		if t, e := p.slowest(); t != "" {
			fmt.Fprintf(s.out, "%8.1fs %s %-*s  slowest %s %.1fs\n", p.total, mark, width, name, t, e)
		} else {
			fmt.Fprintf(s.out, "%8.1fs %s %s\n", p.total, mark, name)
		}
	}
	fmt.Fprintln(s.out)
}

// commonPrefix returns the longest path prefix, up to a slash, that every package name shares.
func commonPrefix(ps []*pkg) string {
	if len(ps) < 2 {
		return ""
	}
	prefix := ps[0].name
	for _, p := range ps[1:] {
		for !strings.HasPrefix(p.name, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		return prefix[:i+1]
	}
	return ""
}

// run reads go test -json from in and writes the summary to out, unbuffered, so that a failure is
// seen as soon as its package ends; progress goes to stderr when it is a terminal. It returns the
// exit code.
func run(in io.Reader, out, stderr io.Writer) int {
	var progress io.Writer
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			progress = stderr
		}
	}
	s := newSummarizer(out, progress)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20) // a test may print a long line
	code := 0
	for sc.Scan() {
		s.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testtime: read go test output: %v\n", err)
		code = 1
	}
	if !s.end() {
		code = 1
	}
	return code
}
