package extproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

var errSaturated = errors.New("saturated")

// fakeScheduler returns the store's endpoints in address order, honouring the subset hint.
type fakeScheduler struct {
	store     *datastore.Store
	mu        sync.Mutex
	saturated bool
	// prefill, when set, is the address of a prefill/decode decision's prefill pod.
	prefill string
}

func (f *fakeScheduler) Schedule(_ context.Context, req *framework.Request) (*framework.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.saturated {
		return nil, errSaturated
	}
	res := &framework.Result{}
	for _, ep := range f.store.Endpoints() {
		if req.SubsetHint == nil || slices.Contains(req.SubsetHint, ep.Address) {
			res.Targets = append(res.Targets, ep)
		}
	}
	if ep := f.store.Get(f.prefill); ep != nil {
		res.Prefill, res.Disaggregation = &framework.Result{Targets: []framework.Endpoint{ep}}, framework.PDSplit
	}
	return res, nil
}

// recorder keeps the PostResponse infos. Unless in a benchmark it also checks that a request's
// prefix hashes (pooled by the router, which then poisons released slices) are the same at
// PostResponse, the last reader, as at PreRequest.
type recorder struct {
	mu     sync.Mutex
	posts  []framework.ResponseInfo
	watch  bool
	hashes map[*framework.Request][]uint64
	bad    []string
	reads  int
}

func (r *recorder) PreRequest(_ context.Context, req *framework.Request, _ *framework.Result) {
	if !r.watch {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hashes[req] = slices.Clone(req.PrefixHashes)
}

func (r *recorder) PostResponse(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts = append(r.posts, *info)
	if want, ok := r.hashes[req]; ok {
		r.reads++
		if !slices.Equal(req.PrefixHashes, want) {
			r.bad = append(r.bad, req.ID)
		}
	}
}

// checkHashes fails t if a request's hashes changed before its PostResponse; it returns how
// many requests were compared.
func (r *recorder) checkHashes(t testing.TB) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.bad {
		t.Errorf("request %s: prefix hashes changed before PostResponse (released too early)", id)
	}
	return r.reads
}

// waitPosts waits until r holds n PostResponse calls.
func waitPosts(t *testing.T, r *recorder, n int) {
	t.Helper()
	poll.UntilState(t, waitTimeout, func() (bool, string) {
		got := len(r.all())
		return got >= n, fmt.Sprintf("%d post-response calls", got)
	}, fmt.Sprintf("%d post-response calls", n))
}

func (r *recorder) all() []framework.ResponseInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.posts)
}

type env struct {
	store  *datastore.Store
	sched  *fakeScheduler
	hooks  *recorder
	client extprocv3.ExternalProcessorClient
	conn   *grpc.ClientConn
}

var addrs = []string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000"}

// newEnv starts the ext_proc server on 127.0.0.1:0 and a client dialled with opts.
func newEnv(t testing.TB, opts ...grpc.DialOption) *env {
	t.Helper()
	return newEnvBudget(t, nil, opts...)
}

// newEnvBudget is newEnv with request bodies reserved from budget.
func newEnvBudget(t testing.TB, budget *body.Budget, opts ...grpc.DialOption) *env {
	t.Helper()
	return newEnvWith(t, envOptions{budget: budget}, opts...)
}

// envOptions are newEnvWith's settings.
type envOptions struct {
	// budget bounds the request bodies in flight; nil: none.
	budget *body.Budget
	// bodyTimeout, when set, is the server's BodyTimeout.
	bodyTimeout time.Duration
	// reg receives the pipeline's metrics; nil registers none.
	reg prometheus.Registerer
	// log receives the pipeline's and the server's logs; nil discards them.
	log *slog.Logger
	// tracer records the spans; nil: tracing off.
	tracer *telemetry.Tracer
}

// newEnvWith is newEnv with o.
func newEnvWith(t testing.TB, o envOptions, opts ...grpc.DialOption) *env {
	t.Helper()
	budget := o.budget
	_, bench := t.(*testing.B) // benchmarks measure the real pools
	e := &env{
		store: datastore.NewStore(nil, nil),
		hooks: &recorder{watch: !bench, hashes: map[*framework.Request][]uint64{}},
	}
	var specs []datastore.EndpointSpec
	for _, a := range addrs {
		specs = append(specs, datastore.EndpointSpec{Address: a})
	}
	e.store.Sync(specs)
	for _, ep := range e.store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama"})
	}
	e.sched = &fakeScheduler{store: e.store}
	bcfg := bbr.DefaultConfig()
	bcfg.MaxBodyBytes = 4 << 20
	router, _ := bbr.NewRouter(bcfg, e.store)
	if !bench {
		router.PoisonReleasedHashes()
		t.Cleanup(func() { e.hooks.checkHashes(t) })
	}
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	flow, _ := flowcontrol.New(
		fcfg,
		e.sched,
		flowcontrol.Options{IsSaturated: func(err error) bool { return errors.Is(err, errSaturated) }},
	)
	m, err := pipeline.NewMetrics(o.reg)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(pipeline.Options{Router: router, Flow: flow, Hooks: e.hooks, Classify: fcfg, Metrics: m,
		BodyBudget: budget, Logger: o.log, Tracer: o.tracer})
	if err != nil {
		t.Fatal(err)
	}
	cfg := extproc.DefaultConfig()
	cfg.Cluster, cfg.Region, cfg.MaxBodyBytes = "c1", "eu-west-1", 4<<20
	if o.bodyTimeout > 0 {
		cfg.BodyTimeout = o.bodyTimeout
	}
	srv, err := extproc.New(cfg, pipe, e.store, o.log)
	if err != nil {
		t.Fatal(err)
	}
	if !bench {
		extproc.PoisonFreedBuffers(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	e.conn, err = grpc.NewClient(
		ln.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.client = extprocv3.NewExternalProcessorClient(e.conn)
	t.Cleanup(func() {
		e.conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return e
}

func headersMsg(eos bool, subset *structpb.Struct, kv ...string) *extprocv3.ProcessingRequest {
	var hs []*corev3.HeaderValue
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	req := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: hs}, EndOfStream: eos}}}
	if subset != nil {
		req.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{extproc.SubsetNamespace: subset}}
	}
	return req
}

func bodyMsg(b []byte, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: b, EndOfStream: eos}}}
}

// sendRequest sends headers and the body in 64 KiB chunks, as Envoy does in FULL_DUPLEX_STREAMED.
func sendRequest(
	t testing.TB,
	s extprocv3.ExternalProcessor_ProcessClient,
	body []byte,
	subset *structpb.Struct,
	extra ...string,
) {
	t.Helper()
	kv := append([]string{":method", "POST", ":path", "/v1/completions", "content-type", "application/json"}, extra...)
	if err := s.Send(headersMsg(false, subset, kv...)); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(body); off += 64 << 10 {
		end := min(off+64<<10, len(body))
		if err := s.Send(bodyMsg(body[off:end], end == len(body))); errors.Is(err, io.EOF) {
			return // the server answered early (immediate response) and closed the stream
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func headerValue(m *extprocv3.HeaderMutation, key string) string {
	for _, h := range m.GetSetHeaders() {
		if h.GetHeader().GetKey() == key {
			return string(h.GetHeader().GetRawValue())
		}
	}
	return ""
}

func bigBody(n int) []byte {
	return []byte(`{"model":"llama","stream":true,"prompt":"` + strings.Repeat("lorem ipsum ", n/12) + `"}`)
}

func TestFullExchange(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := bigBody(1 << 20)
	sendRequest(
		t,
		s,
		body,
		nil,
		"content-length",
		"1048590",
		"x-gateway-destination-endpoint",
		"6.6.6.6:1",
		"x-switchyard-tenant",
		"t",
	)

	// 1. The request-headers answer carries the decision.
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	hr := r.GetRequestHeaders().GetResponse()
	if got := headerValue(hr.GetHeaderMutation(), contract.HeaderDestination); got != addrs[0] {
		t.Fatalf("destination header = %q", got)
	}
	if got := headerValue(hr.GetHeaderMutation(), "x-gateway-model-name"); got != "llama" {
		t.Fatalf("model header = %q", got)
	}
	if !slices.Contains(hr.GetHeaderMutation().GetRemoveHeaders(), "x-switchyard-tenant") || !hr.GetClearRouteCache() {
		t.Fatalf("header mutation = %v", hr)
	}
	meta := r.GetDynamicMetadata().GetFields()[extproc.MetadataNamespace].GetStructValue().
		GetFields()[contract.HeaderDestination].GetStringValue()
	if meta != strings.Join(addrs, ",") {
		t.Fatalf("envoy.lb metadata = %q", meta)
	}
	// 2. The body comes back unchanged in chunks of at most 62000 bytes, the last with EOS.
	var got []byte
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if len(sr.GetBody()) > extproc.ChunkLimit {
			t.Fatalf("chunk of %d bytes", len(sr.GetBody()))
		}
		got = append(got, sr.GetBody()...)
		if sr.GetEndOfStream() {
			break
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("body mutated: %d bytes back, %d sent", len(got), len(body))
	}
	if n := e.store.Get(addrs[0]).InFlight(); n != 1 {
		t.Fatalf("in-flight = %d during the response", n)
	}
	// Another request decided meanwhile takes pooled memory the first must still hold.
	if _, _, err := exchangeOnce(e.client, bigBody(1<<20)); err != nil {
		t.Fatal(err)
	}
	// 3. Response phases pass through and are measured.
	respHeaders := &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{
				Headers: []*corev3.HeaderValue{
					{Key: ":status", RawValue: []byte("200")},
					{Key: "content-type", RawValue: []byte("text/event-stream")},
				},
			},
		}},
	}
	if err := s.Send(respHeaders); err != nil {
		t.Fatal(err)
	}
	r, err = s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	m := r.GetResponseHeaders().GetResponse().GetHeaderMutation()
	if headerValue(m, "x-switchyard-cluster") != "c1" || headerValue(m, "x-switchyard-region") != "eu-west-1" ||
		headerValue(m, "x-switchyard-endpoint") != datastore.OpaqueName(addrs[0]) {
		t.Fatalf("response header mutation = %v", m)
	}
	chunks := []string{
		"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
		"data: {\"choices\":[{\"text\":\"b\"}]}\n\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2," +
			"\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\ndata: [DONE]\n\n",
	}
	for i, c := range chunks {
		time.Sleep(2 * time.Millisecond)
		eos := i == len(chunks)-1
		if err := s.Send(
			&extprocv3.ProcessingRequest{
				Request: &extprocv3.ProcessingRequest_ResponseBody{
					ResponseBody: &extprocv3.HttpBody{Body: []byte(c), EndOfStream: eos},
				},
			},
		); err != nil {
			t.Fatal(err)
		}
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		sr := r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if string(sr.GetBody()) != c || sr.GetEndOfStream() != eos {
			t.Fatalf("response chunk %d = %q eos %v", i, sr.GetBody(), sr.GetEndOfStream())
		}
	}
	_ = s.CloseSend()
	waitPosts(t, e.hooks, 2) // the other request's ends when the server sees its stream closed
	posts := e.hooks.all()
	slices.SortFunc(posts, func(a, b framework.ResponseInfo) int { return b.Status - a.Status })
	if n := e.hooks.checkHashes(t); n != 2 {
		t.Fatalf("prefix hashes compared for %d requests, want 2", n)
	}
	if p := posts[0]; p.Status != 200 || p.OutputTokens != 2 || p.CachedTokens != 4 || p.TTFT <= 0 || p.MeanITL <= 0 {
		t.Fatalf("response info = %+v", p)
	}
	if n := e.store.Get(addrs[0]).InFlight(); n != 0 {
		t.Fatalf("in-flight = %d after the response", n)
	}
}

func subsetStruct(addrs ...any) *structpb.Struct {
	s, _ := structpb.NewStruct(map[string]any{contract.HeaderDestinationSubset: addrs})
	return s
}

func TestSubsetHint(t *testing.T) {
	e := newEnv(t)
	s, err := e.client.Process(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sendRequest(t, s, []byte(`{"model":"llama","prompt":"x"}`), subsetStruct(addrs[2], "10.9.9.9:1"))
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := headerValue(
		r.GetRequestHeaders().GetResponse().GetHeaderMutation(),
		contract.HeaderDestination,
	); got != addrs[2] {
		t.Fatalf("destination = %q, want the subset's %s", got, addrs[2])
	}
	_ = s.CloseSend()
}

func TestImmediateResponses(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name      string
		body      []byte
		subset    *structpb.Struct
		saturated bool
		status    int
		overflow  bool
	}{
		{"malformed", []byte(`{"model"`), nil, false, 400, false},
		{"unknown model", []byte(`{"model":"gpt-x"}`), nil, false, 404, false},
		{"too large", bigBody(5 << 20), nil, false, 413, false},
		{"too large by content-length", []byte(`{"model":"llama"}`), nil, false, 413, false},
		{"saturated", []byte(`{"model":"llama"}`), nil, true, 429, true},
		{"empty subset", []byte(`{"model":"llama"}`), subsetStruct(), false, 503, false},
		{"subset of unknown pods", []byte(`{"model":"llama"}`), subsetStruct("10.9.9.9:1"), false, 503, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.sched.mu.Lock()
			e.sched.saturated = tt.saturated
			e.sched.mu.Unlock()
			s, err := e.client.Process(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var extra []string
			if strings.Contains(tt.name, "content-length") {
				extra = []string{"content-length", "99999999"}
			}
			sendRequest(t, s, tt.body, tt.subset, extra...)
			r, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			ir := r.GetImmediateResponse()
			if int(ir.GetStatus().GetCode()) != tt.status || !bytes.Contains(ir.GetBody(), []byte(`"error"`)) {
				t.Fatalf("immediate response = %v", r)
			}
			if got := headerValue(ir.GetHeaders(), "x-switchyard-overflow") == "1"; got != tt.overflow {
				t.Fatalf("overflow header = %v", got)
			}
		})
	}
}

func TestNoBodyAndHealth(t *testing.T) {
	e := newEnv(t)
	s, err := e.client.Process(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(headersMsg(true, nil, ":method", "GET", ":path", "/v1/models")); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := headerValue(
		r.GetRequestHeaders().GetResponse().GetHeaderMutation(),
		contract.HeaderDestination,
	); !slices.Contains(
		addrs,
		got,
	) {
		t.Fatalf("destination = %q", got)
	}
	hc, err := healthpb.NewHealthClient(e.conn).
		Check(context.Background(), &healthpb.HealthCheckRequest{
			Service: extprocv3.ExternalProcessor_ServiceDesc.ServiceName})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", hc, err)
	}
}
