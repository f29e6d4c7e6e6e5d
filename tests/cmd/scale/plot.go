package main

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one measured curve of a plot and the fit drawn through it to the target size.
type series struct {
	name string
	ns   []float64
	ys   []float64
	fit  Fit
}

// chart is one PNG: measured points, their fitted curves (dashed, to the target size) and the
// goal as a horizontal line.
type chart struct {
	title, ylabel string
	goal          float64 // 0: none
	target        float64
	series        []series
}

// write draws c on log-x axes and writes it as a PNG at path.
func (c chart) write(path string) error {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = "gateways in the pool (N, log scale)"
	p.Y.Label.Text = c.ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.BackgroundColor = color.White
	xmin, xmax := c.target, c.target
	for i, s := range c.series {
		var pts plotter.XYs
		for j := range s.ns {
			if !math.IsNaN(s.ys[j]) && !math.IsInf(s.ys[j], 0) {
				pts = append(pts, plotter.XY{X: s.ns[j], Y: s.ys[j]})
				xmin, xmax = math.Min(xmin, s.ns[j]), math.Max(xmax, s.ns[j])
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("scale: plot %s: %w", s.name, err)
		}
		col := plotutil.Color(i)
		line.Color, points.Color, points.Shape = col, col, draw.CircleGlyph{}
		line.Width = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(s.name+" (measured)", line, points)
		if s.fit.Points >= 2 {
			f := plotter.NewFunction(func(x float64) float64 { return s.fit.At(x) })
			f.XMin, f.XMax = pts[0].X, c.target
			f.Color, f.Dashes, f.Width = col, []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
			p.Add(f)
			p.Legend.Add(s.name+" fit: "+s.fit.String(), f)
		}
	}
	if c.goal > 0 {
		g := plotter.NewFunction(func(float64) float64 { return c.goal })
		g.Color, g.Width = color.RGBA{R: 200, A: 255}, vg.Points(1)
		p.Add(g)
		p.Legend.Add(fmt.Sprintf("goal %.4g", c.goal), g)
	}
	p.X.Min, p.X.Max = xmin/1.2, xmax*1.2
	p.Y.Min = 0
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("scale: plot: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scale: plot: %w", err)
	}
	if _, err := wt.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("scale: plot %s: %w", path, err)
	}
	return f.Close()
}
