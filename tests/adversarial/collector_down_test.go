package adversarial

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// stalledCollector accepts connections and never answers, like a hung OTLP collector.
func stalledCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // held open, never read
			default:
				_ = c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for {
			select {
			case c := <-conns:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String()
}

// TestTracingCollectorDown runs a router exporting over OTLP/HTTP and a gateway exporting over
// OTLP/gRPC to collectors that accept connections and never answer, every request sampled, with
// export queues of 16 spans: every completion through both tiers is still served, each
// process's export queue stays within its capacity, the spans that did not fit are counted as
// dropped (queue_full) and none as exported, and both processes still stop on SIGTERM although
// their final flush never reaches the collector.
func TestTracingCollectorDown(t *testing.T) {
	const queue = 16
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(queue))
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "2000")
	w := newWorld(t)
	pod := w.Pod("h100")
	gw := w.Gateway("adv-otel-down", "us-east-1", []string{pod.Listen},
		"--otlp-endpoint="+stalledCollector(t), "--otlp-insecure", "--trace-sample-ratio=1")
	router := w.Router("us-east-1", "",
		"--otlp-endpoint=http://"+stalledCollector(t), "--otlp-protocol=http", "--trace-sample-ratio=1")
	if err := harness.WaitClusters(
		context.Background(),
		"http://"+router.Admin,
		w.Token(),
		1,
		60*time.Second,
	); err != nil {
		t.Fatal(err)
	}
	const requests = 40 // three spans each in each tier: well over two queues' worth
	for i := range requests {
		servesCompletion(t, "completion "+strconv.Itoa(i)+" with the collector down", router.Listen)
	}
	for _, n := range []struct {
		addr, prefix string
	}{{gw.Metrics, "switchyard_gateway_trace_"}, {router.Metrics, "switchyard_router_trace_"}} {
		if got := metricValue(t, n.addr, n.prefix+"queue_spans"); got > queue {
			t.Errorf("%squeue_spans = %v, above the capacity %d", n.prefix, got, queue)
		}
		if got := metricValue(t, n.addr, n.prefix+"queue_capacity_spans"); got != queue {
			t.Errorf("%squeue_capacity_spans = %v, want %d", n.prefix, got, queue)
		}
		if got := metricValue(t, n.addr, n.prefix+`spans_dropped_total{reason="queue_full"}`); got == 0 {
			t.Errorf("%sspans_dropped_total{reason=\"queue_full\"} = 0 with the collector hung", n.prefix)
		}
		if got := metricValue(t, n.addr, n.prefix+"spans_exported_total"); got != 0 {
			t.Errorf("%sspans_exported_total = %v with the collector hung", n.prefix, got)
		}
	}
	for _, n := range []*harness.Node{router, gw} {
		if err := n.Stop(60 * time.Second); err != nil {
			t.Errorf("stop %s with the collector hung: %v", n.Name(), err)
		}
	}
}
