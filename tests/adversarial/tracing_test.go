package adversarial

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// otlpReceiver is an OTLP/gRPC collector in the test process: it keeps every span exported to
// it, with the service.name of the process that sent it.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []receivedSpan
}

// receivedSpan is one exported span and the service that sent it.
type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func (o *otlpReceiver) Export(
	_ context.Context,
	req *collectortrace.ExportTraceServiceRequest,
) (*collectortrace.ExportTraceServiceResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				o.spans = append(o.spans, receivedSpan{service: service, span: s})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// trace returns the spans received of one trace, by name.
func (o *otlpReceiver) trace(traceID []byte) map[string][]receivedSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]receivedSpan{}
	for _, s := range o.spans {
		if string(s.span.GetTraceId()) == string(traceID) {
			out[s.span.GetName()] = append(out[s.span.GetName()], s)
		}
	}
	return out
}

// startReceiver serves an otlpReceiver on 127.0.0.1 until the test ends, over OTLP/gRPC
// (protocol "grpc") or OTLP/HTTP protobuf ("http", at /v1/traces), and returns its address.
func startReceiver(t *testing.T, protocol string) (*otlpReceiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &otlpReceiver{}
	if protocol == "http" {
		srv := &http.Server{Handler: recv, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return recv, ln.Addr().String()
	}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return recv, ln.Addr().String()
}

// ServeHTTP is the OTLP/HTTP protobuf endpoint (POST /v1/traces, gzip or not).
func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	req := &collectortrace.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(raw, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, _ := o.Export(r.Context(), req)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			v := kv.GetValue()
			if sv := v.GetStringValue(); sv != "" {
				return sv
			}
			if arr := v.GetArrayValue(); arr != nil {
				var parts []string
				for _, e := range arr.GetValues() {
					parts = append(parts, e.GetStringValue())
				}
				return strings.Join(parts, ",")
			}
			return v.String()
		}
	}
	return ""
}

// TestTraceAcrossTiers sends one completion with a sampled W3C traceparent through a real router
// and gateway exporting to an in-process OTLP receiver, with a sample ratio of 0 so that only
// parent-based sampling records it (the router told to respect the client's decision), once over OTLP/gRPC and once
// over OTLP/HTTP (the gateway
// given the collector as a URL with its path, the router as host:port). Once both processes are
// stopped (SIGTERM flushes their spans), the receiver holds one trace under the client's trace
// id: the router's request span is a child of the client's span, its routing decision names the
// chosen cluster, a forward attempt is the parent of the gateway's request span, the gateway's
// scheduling span names the chosen pod, its upstream span carries the time to first token and
// the usage, and modelsim received a traceparent of that trace whose parent is the gateway's
// upstream span.
func TestTraceAcrossTiers(t *testing.T) {
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) { traceAcrossTiers(t, protocol) })
	}
}

func traceAcrossTiers(t *testing.T, protocol string) {
	recv, otlp := startReceiver(t, protocol)
	gwTracing := []string{"--otlp-endpoint=" + otlp, "--otlp-insecure", "--trace-sample-ratio=0"}
	routerTracing := append(gwTracing, "--trace-remote-parent=respect") // the client is trusted here
	if protocol == "http" {
		gwTracing = []string{"--otlp-endpoint=http://" + otlp + "/v1/traces", "--otlp-protocol=http",
			"--trace-sample-ratio=0"}
		routerTracing = []string{"--otlp-endpoint=" + otlp, "--otlp-protocol=http", "--otlp-insecure",
			"--trace-sample-ratio=0", "--trace-remote-parent=respect"}
	}
	w := newWorld(t)
	pod := w.Pod("h100")
	gw := w.Gateway("adv-trace", "us-east-1", []string{pod.Listen}, gwTracing...)
	router := w.Router("us-east-1", "", routerTracing...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := harness.WaitClusters(ctx, "http://"+router.Admin, w.Token(), 1, 30*time.Second); err != nil {
		t.Fatal(err) // the router knows the gateway before the first request
	}
	servesCompletion(t, "router before the traced request", router.Listen)

	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest(
		http.MethodPost,
		"http://"+router.Listen+"/v1/chat/completions",
		strings.NewReader(
			`{"model":"`+harness.TestModel+`","messages":[{"role":"user","content":"a secret prompt"}],"max_tokens":3,`+
				`"stream":true,"stream_options":{"include_usage":true}}`,
		),
	)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("traced completion: %d", resp.StatusCode)
	}
	podTP := resp.Header.Get("X-Modelsim-Traceparent")
	if !strings.HasPrefix(podTP, "00-"+clientTrace+"-") {
		t.Fatalf("modelsim received traceparent %q, want one of trace %s", podTP, clientTrace)
	}

	// SIGTERM: each process drains, then flushes the spans still queued (the batch processor
	// would otherwise send them up to 5 s later).
	for _, n := range []*harness.Node{router, gw} {
		if err := n.Stop(30 * time.Second); err != nil {
			t.Fatalf("stop %s: %v", n.Name(), err)
		}
	}
	tid, _ := hex.DecodeString(clientTrace)
	want := []string{
		"router.request",
		"router.route",
		"router.forward",
		"gateway.request",
		"gateway.schedule",
		"gateway.upstream",
	}
	var spans map[string][]receivedSpan
	poll.Until(t, 10*time.Second, func() bool {
		spans = recv.trace(tid)
		for _, name := range want {
			if len(spans[name]) == 0 {
				return false
			}
		}
		return true
	}, "every span of the traced request at the receiver")
	checkTraceTree(t, spans, clientSpan, podTP, pod.Listen)
}

// checkTraceTree checks the parent links and attributes of the traced request's spans.
func checkTraceTree(t *testing.T, spans map[string][]receivedSpan, clientSpan, podTP, podAddr string) {
	t.Helper()
	one := func(name string) *tracepb.Span {
		if n := len(spans[name]); n != 1 {
			t.Fatalf("%d %s spans, want 1", n, name)
		}
		return spans[name][0].span
	}
	rreq, route, fwd := one("router.request"), one("router.route"), one("router.forward")
	greq, sched, up := one("gateway.request"), one("gateway.schedule"), one("gateway.upstream")
	if got := hex.EncodeToString(rreq.GetParentSpanId()); got != clientSpan {
		t.Errorf("router.request's parent is %s, want the client's span %s", got, clientSpan)
	}
	for _, c := range []struct {
		child, parent *tracepb.Span
	}{{route, rreq}, {fwd, rreq}, {greq, fwd}, {sched, greq}, {up, greq}} {
		if string(c.child.GetParentSpanId()) != string(c.parent.GetSpanId()) {
			t.Errorf(
				"%s's parent is %x, want %s (%x)",
				c.child.GetName(),
				c.child.GetParentSpanId(),
				c.parent.GetName(),
				c.parent.GetSpanId(),
			)
		}
	}
	if s := spans["router.request"][0].service; s != "global-router" {
		t.Errorf("router.request from service %q", s)
	}
	if s := spans["gateway.request"][0].service; s != "cluster-gateway" {
		t.Errorf("gateway.request from service %q", s)
	}
	if got := attr(route, "switchyard.cluster"); got != "adv-trace" {
		t.Errorf("router.route chose cluster %q, want adv-trace", got)
	}
	if got := attr(route, "switchyard.top_estimates"); !strings.HasPrefix(got, "adv-trace=") {
		t.Errorf("router.route top estimates %q", got)
	}
	if got := attr(sched, "server.address"); got != podAddr {
		t.Errorf("gateway.schedule chose %q, want the pod %s", got, podAddr)
	}
	if attr(sched, "switchyard.endpoint") == "" || attr(sched, "switchyard.profile") == "" ||
		attr(sched, "switchyard.top_scores") == "" {
		t.Errorf("gateway.schedule lacks the chosen pod's name, the profile or the scores: %v", sched.GetAttributes())
	}
	if want := "00-" + hex.EncodeToString(
		up.GetTraceId(),
	) + "-" + hex.EncodeToString(
		up.GetSpanId(),
	) + "-01"; podTP != want {
		t.Errorf("modelsim received traceparent %q, want the gateway's upstream span's %q", podTP, want)
	}
	if attr(up, "switchyard.ttft_ms") == "" || attr(up, "gen_ai.usage.output_tokens") == "" || len(up.GetEvents()) == 0 {
		t.Errorf("gateway.upstream lacks the time to first token or the usage: %v", up.GetAttributes())
	}
	for name, ss := range spans {
		for _, s := range ss {
			for _, kv := range s.span.GetAttributes() {
				if strings.Contains(kv.GetValue().String(), "secret prompt") {
					t.Errorf("%s carries prompt text in %s", name, kv.GetKey())
				}
			}
		}
	}
}
