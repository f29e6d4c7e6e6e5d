package extproc_test

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
)

// BenchmarkDecision100KB measures one ext_proc decision for a 100 KB body over a real gRPC
// stream on loopback: headers, two 64 KiB body chunks, the decision and the body echoed back.
// Besides the mean it reports the 50th and 99th percentile of the whole exchange (p50-us,
// p99-us), of the wait from the last body chunk sent to the decision received (decide-p50-us,
// decide-p99-us), and the process CPU time per exchange, client included (cpu-us/op). The client
// stands in for Envoy; it uses the server's codec and non-zeroing buffer pool so that the Go
// client's own buffer clearing (which Envoy does not have) is not counted against the gateway.
// With -extproc.client-process the client runs in a child process (see benchmarkClientProcess).
func BenchmarkDecision100KB(b *testing.B) {
	if *clientProcess {
		benchmarkClientProcess(b)
		return
	}
	e := newEnv(b, grpc.WithDefaultCallOptions(grpc.ForceCodecV2(extproc.NewCodec())))
	body := bigBody(100 << 10)
	var lat, decide latencies
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := cpuTime()
	for b.Loop() {
		total, wait, err := exchangeOnce(e.client, body)
		if err != nil {
			b.Fatal(err)
		}
		lat, decide = append(lat, total), append(decide, wait)
	}
	lat.report(b, "", cpuTime()-cpu)
	decide.report(b, "decide-", -1)
}

// latencies are per-iteration durations of a benchmark.
type latencies []time.Duration

// report adds the 50th and 99th percentile (named with prefix) and, unless cpu is negative,
// the process CPU time per iteration (cpu is the total), in microseconds, to the benchmark's
// output. On a shared machine the CPU time is the steadier figure: waiting for a core does not
// count.
func (l latencies) report(b *testing.B, prefix string, cpu time.Duration) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	for _, q := range []struct {
		unit string
		p    float64
	}{{"p50-us", 0.50}, {"p99-us", 0.99}} {
		b.ReportMetric(float64(s[int(q.p*float64(len(s)-1))])/float64(time.Microsecond), prefix+q.unit)
	}
	if cpu >= 0 {
		b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(len(l)), "cpu-us/op")
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
