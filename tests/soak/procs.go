package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Process is one Switchyard process of the stack whose resources are sampled.
type Process struct {
	// Name is the stack's name for it (e.g. gateway-use1-a, router-us-east-1).
	Name string
	// Metrics is its /metrics address.
	Metrics string
	// Points are its samples, oldest first.
	Points []Point
}

// metricsAddr matches the metrics address in a gateway's or router's start log line, in text
// (metrics=127.0.0.1:9100) or JSON ("metrics":"127.0.0.1:9100") format.
var metricsAddr = regexp.MustCompile(`"?metrics"?[=:]"?([0-9A-Za-z.\-\[\]:]+:[0-9]+)`)

// Discover finds every gateway and router of a local stack from the start lines in its log
// directory (one log file per process).
func Discover(logDir string) ([]*Process, error) {
	files, err := filepath.Glob(filepath.Join(logDir, "*.log"))
	if err != nil {
		return nil, err
	}
	var out []*Process
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".log")
		if !strings.HasPrefix(name, "gateway-") && !strings.HasPrefix(name, "router-") {
			continue
		}
		addr, err := findMetricsAddr(f)
		if err != nil {
			return nil, err
		}
		out = append(out, &Process{Name: name, Metrics: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("soak: no gateway or router log in %s", logDir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func findMetricsAddr(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "started") {
			continue
		}
		if m := metricsAddr.FindStringSubmatch(line); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("soak: no start line with a metrics address in %s", path)
}

// get requests path from the process's metrics port.
func (p *Process) get(ctx context.Context, client *http.Client, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Metrics+path, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// Sample scrapes the process's heap in use and goroutine count.
func (p *Process) Sample(ctx context.Context, client *http.Client, at time.Duration) error {
	resp, err := p.get(ctx, client, "/metrics")
	if err != nil {
		return fmt.Errorf("scrape %s: %w", p.Name, err)
	}
	defer resp.Body.Close()
	heap, goroutines, err := parseRuntime(resp.Body)
	if err != nil {
		return fmt.Errorf("scrape %s: %w", p.Name, err)
	}
	p.Points = append(p.Points, Point{At: at, HeapBytes: heap, Goroutines: goroutines})
	return nil
}

// parseRuntime reads go_memstats_heap_inuse_bytes and go_goroutines from Prometheus text.
func parseRuntime(r io.Reader) (heap, goroutines float64, err error) {
	found := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_heap_inuse_bytes":
			dst = &heap
		case "go_goroutines":
			dst = &goroutines
		default:
			continue
		}
		if *dst, err = strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("go_memstats_heap_inuse_bytes or go_goroutines missing")
	}
	return heap, goroutines, nil
}

// HeapProfile writes the process's heap profile (pprof format, after a GC: the process's
// /debug/pprof/heap?gc=1, served with --enable-pprof) to path.
func (p *Process) HeapProfile(ctx context.Context, client *http.Client, path string) error {
	resp, err := p.get(ctx, client, "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("heap profile of %s: %w", p.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile of %s: %s (started without --enable-pprof?)", p.Name, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("heap profile of %s: %w", p.Name, err)
	}
	return f.Close()
}
