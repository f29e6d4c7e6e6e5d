package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkProxyOverhead compares a non-streaming completion sent directly to a loopback model
// server with the same request sent through the gateway; the difference is the proxy's overhead.
// cpu-us/op is the process's CPU time per request (client, gateway and model server together),
// the steadier figure on a shared machine.
func BenchmarkProxyOverhead(b *testing.B) {
	answer := `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	up := upstream(b, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, answer) })
	e := newEnv(b, nil, up)
	body := `{"model":"llama","prompt":"` + strings.Repeat("hello world ", 100) + `"}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for _, target := range []struct{ name, url string }{{"direct", "http://" + up}, {"gateway", e.url}} {
		b.Run(target.name, func(b *testing.B) {
			postLoop(b, client, target.url, body)
		})
	}
}

// postLoop posts body as a completion to url b.N times, reporting allocations and the process's
// CPU time per request (cpu-us/op).
func postLoop(b *testing.B, client *http.Client, url, body string) {
	b.ReportAllocs()
	cpu := cpuTime()
	defer func() {
		b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
	}()
	for b.Loop() {
		resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkProxyBody sends non-streaming completions of growing body sizes through the gateway:
// the body path (read, route, forward) is the part that grows with the size. Compare runs before
// and after a change with benchstat.
func BenchmarkProxyBody(b *testing.B) {
	answer := `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	up := upstream(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, answer)
	})
	e := newEnv(b, nil, up)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for _, size := range []int{1 << 10, 16 << 10, 48 << 10} {
		body := `{"model":"llama","prompt":"` + strings.Repeat("x", size-30) + `"}`
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			postLoop(b, client, e.url, body)
		})
	}
}
