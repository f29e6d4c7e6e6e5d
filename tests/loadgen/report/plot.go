package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// minPlotMs keeps zero latencies off the log axis.
const minPlotMs = 0.01

// WritePlot draws the TTFT CDF of every target, one line each, on a log-x axis, and writes it as
// a PNG. A line stops at its success fraction: failed requests never get a first token.
func WritePlot(w io.Writer, r *Report) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("TTFT CDF — %s (seed %d)", r.Workload, r.Seed)
	p.X.Label.Text = "time to first token (ms, log scale)"
	p.Y.Label.Text = "fraction of requests"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(logTicks)
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	xmin, xmax, err := addLines(p, r.Targets)
	if err != nil {
		return err
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 1, 10
	}
	p.X.Min, p.X.Max = xmin, max(xmax, xmin*10)
	p.BackgroundColor = color.White
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("report: plot: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("report: write plot: %w", err)
	}
	return nil
}

// addLines draws one CDF line per target and returns the x range covered.
func addLines(p *plot.Plot, targets []Target) (xmin, xmax float64, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, t := range targets {
		pts := make(plotter.XYs, 0, len(t.TTFTCDF))
		for _, c := range t.TTFTCDF {
			x := max(c.Ms, minPlotMs)
			pts = append(pts, plotter.XY{X: x, Y: c.Frac})
			xmin, xmax = min(xmin, x), max(xmax, x)
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return 0, 0, fmt.Errorf("report: plot %s: %w", t.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / 7)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(t.Name, line)
	}
	return xmin, xmax, nil
}

// logTicks labels 1, 2 and 5 times each power of ten in [lo, hi] and marks the other integers.
func logTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		decade := math.Pow(10, e)
		for m := 1.0; m <= 9; m++ {
			v := m * decade
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}
