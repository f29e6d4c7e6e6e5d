package extproc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
)

// clientProcess runs BenchmarkDecision100KB's stand-in for Envoy in a child process, as Envoy is
// in production: the benchmark process then holds the server alone, so B/op, allocs/op and
// cpu-us/op are the gateway's, and the stand-in's garbage collection (off there, see runStandIn)
// neither pauses the server nor competes with it for the cores.
var clientProcess = flag.Bool("extproc.client-process", false,
	"BenchmarkDecision100KB: run the Envoy stand-in client in a separate process")

// standInEnv names the server address in the environment of the child process.
const standInEnv = "SWITCHYARD_EXTPROC_STANDIN_ADDR"

func TestMain(m *testing.M) {
	if addr := os.Getenv(standInEnv); addr != "" {
		if err := runStandIn(addr, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "stand-in:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// standInMemoryLimit bounds the stand-in's heap: it runs without a garbage collector until then.
const standInMemoryLimit = 256 << 20

// runStandIn is the child process: for each count n read from in (uint32, little-endian) it runs
// n exchanges of a 100 KB body against addr and writes, for each, the exchange's and the
// decision's duration in nanoseconds, then its own CPU time for the round (uint64s). It returns
// when in ends. Envoy has no garbage collector, and the stand-in's (it allocates about 100 KB an
// exchange, decoding the body sent back) took the cores the server needed and set the measured
// p99, so it collects only when its heap reaches standInMemoryLimit (every ~2,500 exchanges).
func runStandIn(addr string, in io.Reader, out io.Writer) error {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(standInMemoryLimit)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(extproc.NewCodec())))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := extprocv3.NewExternalProcessorClient(conn)
	body := bigBody(100 << 10)
	w := bufio.NewWriter(out)
	var n uint32
	for {
		if err := binary.Read(in, binary.LittleEndian, &n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		cpu := cpuTime()
		for range n {
			total, decide, err := exchangeOnce(client, body)
			if err != nil {
				return err
			}
			_ = binary.Write(w, binary.LittleEndian, [2]int64{int64(total), int64(decide)})
		}
		_ = binary.Write(w, binary.LittleEndian, int64(cpuTime()-cpu))
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// exchangeOnce runs one ext_proc exchange for body: headers, body chunks of 64 KiB, the
// decision and the body streamed back. It returns the whole exchange's duration and the wait
// from the last body chunk sent to the decision received.
func exchangeOnce(client extprocv3.ExternalProcessorClient, body []byte) (total, decide time.Duration, err error) {
	start := time.Now()
	s, err := client.Process(context.Background())
	if err != nil {
		return 0, 0, err
	}
	kv := []string{":method", "POST", ":path", "/v1/completions", "content-type", "application/json"}
	if err := s.Send(headersMsg(false, nil, kv...)); err != nil {
		return 0, 0, err
	}
	for off := 0; off < len(body); off += 64 << 10 {
		end := min(off+64<<10, len(body))
		if err := s.Send(bodyMsg(body[off:end], end == len(body))); err != nil {
			return 0, 0, err
		}
	}
	sent := time.Now()
	for first := true; ; first = false {
		r, err := s.Recv()
		if err != nil {
			return 0, 0, err
		}
		if first {
			decide = time.Since(sent)
		}
		if r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream() {
			break
		}
	}
	_ = s.CloseSend()
	return time.Since(start), decide, nil
}

// standIn is the parent's handle on the child process.
type standIn struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.Reader
	stderr bytes.Buffer
}

func startStandIn(b *testing.B, addr string) *standIn {
	b.Helper()
	c := &standIn{cmd: exec.Command(os.Args[0])}
	c.cmd.Env = append(os.Environ(), standInEnv+"="+addr)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	c.out = bufio.NewReaderSize(out, 1<<16)
	if err := c.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.in.Close()
		if err := c.cmd.Wait(); err != nil {
			b.Errorf("stand-in: %v: %s", err, c.stderr.String())
		}
	})
	return c
}

// round has the child run n exchanges and returns their durations and the child's CPU time.
// raw is scratch space of 16·n bytes, so that reading the results allocates nothing.
func (c *standIn) round(b *testing.B, n int, raw []byte, lat, decide latencies) (latencies, latencies, time.Duration) {
	if err := binary.Write(c.in, binary.LittleEndian, uint32(n)); err != nil {
		b.Fatal(err)
	}
	raw = raw[:16*n+8]
	if _, err := io.ReadFull(c.out, raw); err != nil {
		b.Fatalf("stand-in: %v: %s", err, c.stderr.String())
	}
	for i := range n {
		lat = append(lat, time.Duration(binary.LittleEndian.Uint64(raw[16*i:])))
		decide = append(decide, time.Duration(binary.LittleEndian.Uint64(raw[16*i+8:])))
	}
	return lat, decide, time.Duration(binary.LittleEndian.Uint64(raw[16*n:]))
}

// benchmarkClientProcess is BenchmarkDecision100KB with the stand-in in a child process. It
// reports what BenchmarkDecision100KB does, with cpu-us/op the server process's CPU time alone,
// and the child's CPU time per exchange as client-cpu-us/op.
func benchmarkClientProcess(b *testing.B) {
	e := newEnv(b)
	c := startStandIn(b, e.conn.Target())
	raw := make([]byte, 16*max(b.N, 100)+8)
	lat := make(latencies, 0, b.N)
	decide := make(latencies, 0, b.N)
	c.round(b, 100, raw, nil, nil) // connect and warm up
	b.SetBytes(int64(len(bigBody(100 << 10))))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	lat, decide, clientCPU := c.round(b, b.N, raw, lat, decide)
	serverCPU := cpuTime() - cpu
	b.StopTimer()
	lat.report(b, "", serverCPU)
	decide.report(b, "decide-", -1)
	b.ReportMetric(float64(clientCPU)/float64(time.Microsecond)/float64(b.N), "client-cpu-us/op")
}
