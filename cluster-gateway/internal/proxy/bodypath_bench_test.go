package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// BenchmarkProxyBodyPath compares the gateway's hardened body path (a buffer that grows as the
// bytes arrive, reserved from a body budget, read under a deadline) with the plain io.ReadAll
// read it replaced, side by side: every iteration sends one non-streaming completion directly
// to the loopback model server, one through the gateway and one through the same gateway
// serving the plain read (ServePlainBodies), in turn, so all three see the same machine noise.
// It reports each path's median time and mean process CPU time per request (client, gateway
// and model server together) and the overhead ratio: the hardened path's cost above the direct
// request divided by the plain path's (1.00: the hardening costs nothing; the target is ≤ 1.05).
func BenchmarkProxyBodyPath(b *testing.B) {
	up := upstream(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	})
	e := newEnvWith(b, envOptions{budget: body.NewBudget(1 << 30)}, up)
	plain := servePlain(b, e)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	for _, size := range []int{1 << 10, 16 << 10, 48 << 10} {
		data := `{"model":"llama","prompt":"` + strings.Repeat("x", size-30) + `"}`
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			paths := []*bodyPath{
				{name: "direct", url: "http://" + up},
				{name: "plain", url: plain},
				{name: "hardened", url: e.url},
			}
			for _, p := range paths {
				p.send(b, client, data) // a connection each before measuring
				p.reset()
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			i := 0
			for b.Loop() {
				for j := range paths { // the order rotates, so no path always runs first
					paths[(i+j)%len(paths)].send(b, client, data)
				}
				i++
			}
			direct, base, hard := paths[0], paths[1], paths[2]
			for _, p := range paths {
				b.ReportMetric(p.medianWall(), p.name+"-us")
				b.ReportMetric(p.meanCPU(), p.name+"-cpu-us")
			}
			b.ReportMetric(ratio(hard.medianWall()-direct.medianWall(), base.medianWall()-direct.medianWall()), "overhead-ratio")
			b.ReportMetric(ratio(hard.meanCPU()-direct.meanCPU(), base.meanCPU()-direct.meanCPU()), "overhead-ratio-cpu")
		})
	}
}

// servePlain serves e's gateway with the plain body read on a loopback listener of its own and
// returns its URL.
func servePlain(b *testing.B, e *env) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.ServePlainBodies(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

// bodyPath is one way to the model server and what its requests cost.
type bodyPath struct {
	name, url string
	wall      []time.Duration
	cpu       time.Duration
}

func (p *bodyPath) reset() { p.wall, p.cpu = p.wall[:0], 0 }

// send posts data as a completion and adds its wall and process CPU time.
func (p *bodyPath) send(b *testing.B, client *http.Client, data string) {
	start, cpu := time.Now(), cpuTime()
	resp, err := client.Post(p.url+"/v1/completions", "application/json", strings.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: status %d", p.name, resp.StatusCode)
	}
	p.cpu += cpuTime() - cpu
	p.wall = append(p.wall, time.Since(start))
}

func (p *bodyPath) medianWall() float64 {
	if len(p.wall) == 0 {
		return 0
	}
	s := slices.Clone(p.wall)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Microsecond)
}

func (p *bodyPath) meanCPU() float64 {
	if len(p.wall) == 0 {
		return 0
	}
	return float64(p.cpu) / float64(time.Microsecond) / float64(len(p.wall))
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
