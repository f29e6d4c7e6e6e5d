package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"runtime"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func numCPU() int { return runtime.NumCPU() }

// errorPoints are a policy's (load, mean P95) points with their confidence intervals.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// Len resolves the two embedded Len methods (they agree).
func (e errorPoints) Len() int { return len(e.XYs) }

// writeSweepPlot draws offered load against mean P95 TTFT for every policy of s, one line each
// with its 95% interval as error bars, on a log-y axis, and writes it as a PNG. An infinite or
// missing mean leaves its point out (the table shows it).
func writeSweepPlot(path string, s *scenarioCells, aggs []Aggregate) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: P95 TTFT by offered load (mean ± 95%% CI)", s.scenario)
	p.X.Label.Text = "offered load (fraction of fleet capacity)"
	p.Y.Label.Text = "P95 TTFT (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.TickerFunc(sweepLogTicks)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.BackgroundColor = color.White
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, policy := range s.policies {
		pts := policyPoints(aggs, policy)
		if len(pts.XYs) == 0 {
			continue
		}
		for j := range pts.XYs {
			ymin = min(ymin, pts.XYs[j].Y-pts.YErrors[j].Low)
			ymax = max(ymax, pts.XYs[j].Y+pts.YErrors[j].High)
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return fmt.Errorf("bench: sweep plot %s: %w", policy, err)
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return fmt.Errorf("bench: sweep plot %s: %w", policy, err)
		}
		c, shape, width := sweepStyle(i, policy)
		line.Color, points.Color, bars.Color = c, c, c
		line.Width = width
		points.Shape = shape
		if policy == OraclePolicy {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line, points, bars)
		p.Legend.Add(policy, line, points)
	}
	if !math.IsInf(ymin, 1) {
		p.Y.Min, p.Y.Max = ymin/1.5, max(ymax*30, ymin*100) // headroom for the legend
	}
	if len(s.loads) > 0 {
		p.X.Min, p.X.Max = s.loads[0]-0.05, s.loads[len(s.loads)-1]+0.05
	}
	wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("bench: sweep plot: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: sweep plot: %w", err)
	}
	_, werr := wt.WriteTo(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("bench: sweep plot: %w", werr)
	}
	return nil
}

// sweepStyle is the colour, glyph and line width of the i-th policy's line: the palette's 7
// colours and 8 glyphs cycle together, so no two of the first 56 lines look alike, and the shipped
// profile is drawn thick and black so it stands out from the baselines.
func sweepStyle(i int, policy string) (color.Color, draw.GlyphDrawer, vg.Length) {
	if policy == Shipped {
		return color.Black, draw.CircleGlyph{}, vg.Points(2.5)
	}
	return plotutil.Color(i), plotutil.Shape(i), vg.Points(1.5)
}

// minPlotMs keeps points off zero on the log axis.
const minPlotMs = 0.1

// policyPoints returns policy's finite mean P95s by load, with their intervals (none for one
// seed); a lower bound under a tenth of the mean (on a log axis, an interval reaching zero) is
// cut there.
func policyPoints(aggs []Aggregate, policy string) errorPoints {
	var e errorPoints
	for _, a := range aggs {
		m := a.TTFTP95.Mean
		if a.Policy != policy || math.IsNaN(m) || math.IsInf(m, 0) || m <= 0 {
			continue
		}
		m = max(m, minPlotMs)
		var lo, hi float64
		if a.TTFTP95.HasCI() {
			lo, hi = min(a.TTFTP95.HalfWidth, 0.9*m), a.TTFTP95.HalfWidth
		}
		e.XYs = append(e.XYs, plotter.XY{X: a.Load, Y: m})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{lo, hi})
	}
	return e
}

// sweepLogTicks labels 1, 2 and 5 times each power of ten in [lo, hi].
func sweepLogTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		decade := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			if v := m * decade; v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ticks
}
