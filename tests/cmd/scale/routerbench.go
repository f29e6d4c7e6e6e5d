package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// routerBenchmarks are the global-router Go benchmarks the sweep runs (package frontdoor), each
// with its -benchtime: decision time at N clusters × M models, throughput and failover.
var routerBenchmarks = []struct{ pattern, benchtime string }{
	{"^BenchmarkRouteAtScale$", "3000x"},
	{"^BenchmarkRouterThroughput$", "20000x"},
	{"^BenchmarkFailover$", "1x"},
}

// Benchmarks are parsed `go test -bench` results: by benchmark name (without the -GOMAXPROCS
// suffix), by unit ("ns/op", "p99-us", ...), the value.
type Benchmarks map[string]map[string]float64

// runRouterBenchmarks runs routerBenchmarks in the workspace at root and parses their output.
func runRouterBenchmarks(ctx context.Context, root string, log io.Writer) (Benchmarks, error) {
	out := Benchmarks{}
	for _, rb := range routerBenchmarks {
		fmt.Fprintf(log, "router benchmark %s (-benchtime=%s)\n", rb.pattern, rb.benchtime)
		cmd := exec.CommandContext(ctx, "go", "test", "-run=^$", "-bench="+rb.pattern, "-benchtime="+rb.benchtime,
			"-benchmem", "./internal/frontdoor/")
		cmd.Dir = filepath.Join(root, "global-router")
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, log), log
		if err := cmd.Run(); err != nil {
			return out, fmt.Errorf("scale: go test -bench=%s: %w", rb.pattern, err)
		}
		for name, units := range parseBenchmarks(&stdout) {
			out[name] = units
		}
	}
	return out, nil
}

// parseBenchmarks reads `go test -bench` output: lines "BenchmarkX/sub-2 N v unit v unit ...".
func parseBenchmarks(r io.Reader) Benchmarks {
	out := Benchmarks{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		units := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				units[f[i+1]] = v
			}
		}
		out[name] = units
	}
	return out
}

// get returns one figure, NaN-free: 0 when the benchmark or unit is missing.
func (b Benchmarks) get(name, unit string) float64 { return b[name][unit] }
