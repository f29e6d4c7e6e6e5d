package app_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

type gateway struct {
	*app.Gateway
	pods []*fakeVLLM
	http string
}

// startGateway runs a gateway in-process on loopback ports in front of n fake vLLM servers and
// waits until it is ready.
func startGateway(t *testing.T, n int, extra ...string) *gateway {
	t.Helper()
	return startGatewayWith(t, n, nil, extra...)
}

// startGatewayWith is startGateway for a gateway whose --listen serves TLS when client is not
// nil: it is reached at https:// with client.
func startGatewayWith(t *testing.T, n int, client *http.Client, extra ...string) *gateway {
	t.Helper()
	var pods []*fakeVLLM
	for range n {
		pods = append(pods, newFakeVLLM(t))
	}
	return startGatewayOn(t, pods, client, extra...)
}

// startGatewayOn is startGatewayWith in front of the given fake servers (several gateways may
// share them, as replicas do).
func startGatewayOn(t *testing.T, pods []*fakeVLLM, client *http.Client, extra ...string) *gateway {
	t.Helper()
	g := &gateway{pods: pods}
	var addrs []string
	for _, p := range pods {
		addrs = append(addrs, p.addr())
	}
	args := append([]string{
		"--cluster=c1",
		"--region=us-east-1",
		"--listen=127.0.0.1:0",
		"--ext-proc-listen=127.0.0.1:0",
		"--metrics-listen=127.0.0.1:0",
		"--grpc-health-port=0",
		"--endpoints=" + strings.Join(addrs, ","),
		"--scrape-interval=20ms",
	}, extra...)
	cfg, err := app.ParseConfig(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := app.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g.Gateway, g.http = gw, "http://"+gw.HTTPAddr()
	if client == nil {
		client = http.DefaultClient
	} else {
		g.http = "https://" + gw.HTTPAddr()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	poll.Until(t, waitTimeout, func() bool {
		return status(t, "http://"+gw.MetricsAddr()+"/readyz") == 200 &&
			strings.Contains(getWith(t, client, g.http+"/v1/models"), "sql-lora")
	}, "gateway ready with models")
	return g
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, url string) string {
	t.Helper()
	return getWith(t, http.DefaultClient, url)
}

func getWith(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHTTPFrontDoor(t *testing.T) {
	g := startGateway(t, 3)
	// x-switchyard-endpoint names the pod (opaquely: the pods are listed without names).
	names := []string{
		datastore.OpaqueName(g.pods[0].addr()),
		datastore.OpaqueName(g.pods[1].addr()),
		datastore.OpaqueName(g.pods[2].addr()),
	}
	tests := []struct {
		name, path, body string
		status           int
		contains         string
	}{
		{"completion", "/v1/completions", `{"model":"llama","prompt":"hello"}`, 200, `"a b c"`},
		{
			"streamed chat",
			"/v1/chat/completions",
			`{"model":"llama","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			200,
			"[DONE]",
		},
		{"adapter", "/v1/completions", `{"model":"sql-lora","prompt":"select"}`, 200, `"sql-lora"`},
		{"unknown model", "/v1/completions", `{"model":"gpt-x","prompt":"x"}`, 404, "model_not_found"},
		{"malformed", "/v1/completions", `{"model":`, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, g.http+tt.path, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.contains) {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if resp.Header.Get("X-Switchyard-Cluster") != "c1" || resp.Header.Get("X-Switchyard-Region") != "us-east-1" {
				t.Fatalf("headers %v", resp.Header)
			}
			if tt.status == 200 && !slices.Contains(names, resp.Header.Get("X-Switchyard-Endpoint")) {
				t.Fatalf("endpoint header %q", resp.Header.Get("X-Switchyard-Endpoint"))
			}
		})
	}
	metrics := get(t, "http://"+g.MetricsAddr()+"/metrics")
	for _, m := range []string{`switchyard_gateway_requests_total{code="200",model="llama"}`,
		"switchyard_gateway_request_duration_seconds", "go_goroutines"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if s := status(t, g.http+p); s != 200 {
			t.Errorf("%s = %d", p, s)
		}
	}
}

func TestStreamingArrivesInChunks(t *testing.T) {
	g := startGateway(t, 1)
	resp, err := http.Post(
		g.http+"/v1/completions",
		"application/json",
		strings.NewReader(`{"model":"llama","prompt":"x","stream":true}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: {") {
			events++
		}
	}
	if events != 3 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events = %d content-type %q", events, resp.Header.Get("Content-Type"))
	}
}

func TestSaturationAnswers429(t *testing.T) {
	g := startGateway(t, 2, "--queue-ttl=200ms")
	for _, p := range g.pods {
		p.waiting.Store(50) // queue far beyond the saturation threshold
	}
	poll.Until(t, waitTimeout, func() bool {
		resp, body := post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"x"}`)
		return resp.StatusCode == 429 && resp.Header.Get("X-Switchyard-Overflow") == "1" &&
			resp.Header.Get("Retry-After") != "" && strings.Contains(body, "overloaded")
	}, "saturation answered 429")
	for _, p := range g.pods {
		p.waiting.Store(0)
	}
	poll.Until(t, waitTimeout, func() bool {
		resp, _ := post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"x"}`)
		return resp.StatusCode == 200
	}, "capacity back")
}

func TestExtProcFrontDoor(t *testing.T) {
	g := startGateway(t, 2)
	if err := extProcExchange(t, g, insecure.NewCredentials()); err != nil {
		t.Fatal(err)
	}
}

// extProcExchange runs one request's ext_proc exchange with g over creds, as Envoy does, and
// checks the destination and the streamed body; it returns the error of opening the stream or
// of its first exchange (a refused connection), and fails t on a wrong answer.
func extProcExchange(t *testing.T, g *gateway, creds credentials.TransportCredentials) error {
	t.Helper()
	var dests []string
	for _, p := range g.pods {
		dests = append(dests, p.addr())
	}
	return extProcExchangeAt(t, g.ExtProcAddr(), dests, creds)
}

// extProcExchangeAt is extProcExchange with the ext_proc server at addr, in front of the pods
// at dests.
func extProcExchangeAt(t *testing.T, addr string, dests []string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
	if err != nil {
		return err
	}
	body := []byte(`{"model":"llama","prompt":"hello through envoy"}`)
	hdrs := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":method", RawValue: []byte("POST")}, {Key: ":path", RawValue: []byte("/v1/completions")},
		{Key: "content-type", RawValue: []byte("application/json")},
	}}
	for _, m := range []*extprocv3.ProcessingRequest{
		{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: hdrs}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
	} {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	r, err := s.Recv()
	if err != nil {
		return err
	}
	var dest string
	for _, h := range r.GetRequestHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == "x-gateway-destination-endpoint" {
			dest = string(h.GetHeader().GetRawValue())
		}
	}
	if !slices.Contains(dests, dest) {
		t.Fatalf("destination %q is not a pod", dest)
	}
	meta := r.GetDynamicMetadata().GetFields()["envoy.lb"].GetStructValue().
		GetFields()["x-gateway-destination-endpoint"].GetStringValue()
	if !strings.HasPrefix(meta, dest) {
		t.Fatalf("metadata %q does not start with %q", meta, dest)
	}
	r, err = s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.GetRequestBody().
		GetResponse().
		GetBodyMutation().
		GetStreamedResponse(); string(got.GetBody()) != string(body) ||
		!got.GetEndOfStream() {
		t.Fatalf("body response %v", got)
	}
	_ = s.CloseSend()
	return nil
}

func TestParseConfig(t *testing.T) {
	base := []string{"--cluster=c", "--region=r", "--endpoints=127.0.0.1:8001"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(app.Config) bool
		wantErr string
	}{
		{"defaults", base, nil, func(c app.Config) bool {
			return c.Listen == ":8080" && c.Profile == "default" && c.EndpointHeader && c.MaxBodyBytes == 32<<20 &&
				c.MaxEjectionPercent == 50
		}, ""},
		{
			"env",
			[]string{"--endpoints=127.0.0.1:1"},
			map[string]string{"SWITCHYARD_CLUSTER": "c", "SWITCHYARD_REGION": "r", "SWITCHYARD_EXT_PROC_LISTEN": ":7000"},
			func(c app.Config) bool { return c.Cluster == "c" && c.ExtProcListen == ":7000" },
			"",
		},
		{"flag beats env", append(base, "--listen=:1234"), map[string]string{"SWITCHYARD_LISTEN": ":9999"},
			func(c app.Config) bool { return c.Listen == ":1234" }, ""},
		{"endpoint header off", append(base, "--endpoint-header=false", "--profile=round-robin"), nil,
			func(c app.Config) bool { return !c.EndpointHeader && c.Profile == "round-robin" }, ""},
		{"TLS listener", append(base, "--tls-cert-file=c", "--tls-key-file=k", "--tls-client-ca-file=ca"), nil,
			func(c app.Config) bool {
				return c.TLSCertFile == "c" && c.TLSKeyFile == "k" && c.TLSClientCAFile == "ca"
			}, ""},
		{"TLS certificate without key", append(base, "--tls-cert-file=c"), nil, nil, "--tls-key-file"},
		{"TLS client CA without a certificate", append(base, "--tls-client-ca-file=ca"), nil, nil, "--tls-cert-file"},
		{"ext_proc over TLS", append(base, "--secure-serving", "--cert-path=/etc/tls"), nil,
			func(c app.Config) bool { return c.SecureServing && c.CertPath == "/etc/tls" }, ""},
		{
			"cert path without secure serving",
			append(base, "--cert-path=/etc/tls"),
			nil,
			nil,
			"--cert-path needs --secure-serving",
		},
		{
			"secure serving without ext_proc",
			append(base, "--secure-serving", "--ext-proc-listen="),
			nil,
			nil,
			"--secure-serving needs --ext-proc-listen",
		},
		{"secure serving from the environment", base, map[string]string{"SWITCHYARD_SECURE_SERVING": "true"},
			func(c app.Config) bool { return c.SecureServing }, ""},
		{"missing cluster", []string{"--region=r", "--endpoints=127.0.0.1:1"}, nil, nil, "--cluster"},
		{"no discovery", []string{"--cluster=c", "--region=r"}, nil, nil, "exactly one"},
		{"two discoveries", append(base, "--pool-name=p"), nil, nil, "exactly one"},
		{"bad profile", append(base, "--profile=fastest"), nil, nil, "fastest"},
		{"bad log format", append(base, "--log-format=xml"), nil, nil, "--log-format"},
		{"remote parent respected by default", base, nil, func(c app.Config) bool {
			return c.TraceRemoteParent == "respect"
		}, ""},
		{"remote parent ratio", append(base, "--trace-remote-parent=ratio"), nil, func(c app.Config) bool {
			return c.TraceRemoteParent == "ratio"
		}, ""},
		{"bad remote parent", append(base, "--trace-remote-parent=trust"), nil, nil, "--trace-remote-parent"},
		{"bad adapter map", append(base, "--adapter-map=a="), nil, nil, "--adapter-map"},
		{"pass-through paths", append(base, "--passthrough-paths=/tokenize=json,/v1/audio/transcriptions=multipart"),
			nil, func(c app.Config) bool {
				return c.PassthroughPaths == "/tokenize=json,/v1/audio/transcriptions=multipart"
			},
			""},
		{"pass-through path without a source", append(base, "--passthrough-paths=/tokenize"), nil, nil,
			"--passthrough-paths"},
		{"pass-through path the proxy serves", append(base, "--passthrough-paths=/v1/completions=json"), nil, nil,
			"--passthrough-paths"},
		{"join without bind", append(base, "--gossip-join=10.0.0.1:7946"), nil, nil, "--gossip-bind"},
		{"bad advertise url", append(base, "--advertise-url=ftp://x"), nil, nil, "--advertise-url"},
		{
			"plain advertise url for a TLS listener",
			append(base, "--tls-cert-file=c", "--tls-key-file=k", "--advertise-url=http://gw:8080"),
			nil,
			nil,
			"want an https URL",
		},
		{
			"TLS listener advertised over https",
			append(base, "--tls-cert-file=c", "--tls-key-file=k", "--advertise-url=https://gw:8443"),
			nil,
			func(c app.Config) bool { return c.AdvertiseURL == "https://gw:8443" },
			"",
		},
		{"missing key file", append(base, "--gossip-key-file=does-not-exist"), nil, nil, "--gossip-key-file"},
		{"bad env value", base, map[string]string{"SWITCHYARD_QUEUE_LIMIT": "many"}, nil, "SWITCHYARD_QUEUE_LIMIT"},
		{"stray argument", append(base, "serve"), nil, nil, "unexpected argument"},
		{
			"priority range",
			append(base, "--min-priority=-3", "--max-priority=20", "--objective-priorities=critical=20,batch=-3"),
			nil,
			func(c app.Config) bool { return c.MinPriority == -3 && c.MaxPriority == 20 },
			"",
		},
		{
			"default priority range",
			base,
			nil,
			func(c app.Config) bool { return c.MinPriority == -10 && c.MaxPriority == 10 },
			"",
		},
		{
			"objective above the range",
			append(base, "--objective-priorities=critical=11"),
			nil,
			nil,
			`objective "critical" has priority 11`,
		},
		{
			"objective below a narrowed range",
			append(base, "--min-priority=-1", "--objective-priorities=batch=-5"),
			nil,
			nil,
			"--objective-priorities",
		},
		{
			"inverted priority range",
			append(base, "--min-priority=5", "--max-priority=1"),
			nil,
			nil,
			"--min-priority=5 is above --max-priority=1",
		},
		{"range without the default priority", append(base, "--min-priority=1"), nil, nil, "default priority"},
		{"endpoint header shows the address", append(base, "--endpoint-header-address"), nil,
			func(c app.Config) bool { return c.EndpointHeader && c.EndpointHeaderAddress }, ""},
		{
			"named static endpoints",
			[]string{"--cluster=c", "--region=r", "--endpoints=vllm-0=127.0.0.1:8001,127.0.0.1:8002"},
			nil,
			func(c app.Config) bool { return c.Endpoints == "vllm-0=127.0.0.1:8001,127.0.0.1:8002" },
			"",
		},
		{"ejection cap", append(base, "--max-ejection-percent=20"), nil,
			func(c app.Config) bool { return c.MaxEjectionPercent == 20 }, ""},
		{"ejection cap above 100%", append(base, "--max-ejection-percent=120"), nil, nil, "--max-ejection-percent"},
		{"negative ejection cap", append(base, "--max-ejection-percent=-1"), nil, nil, "--max-ejection-percent"},
		{"body budget", append(base, "--max-inflight-body-bytes=512MiB", "--memory-limit=2GiB"), nil,
			func(c app.Config) bool { return c.MaxInflightBodyBytes == 512<<20 && c.MemoryLimit == "2GiB" }, ""},
		{"body budget auto", append(base, "--max-inflight-body-bytes=auto"), nil,
			func(c app.Config) bool { return c.MaxInflightBodyBytes == 0 && c.MemoryLimit == "" }, ""},
		{
			"body budget from the environment",
			base,
			map[string]string{"SWITCHYARD_MAX_INFLIGHT_BODY_BYTES": "1Gi", "SWITCHYARD_MEMORY_LIMIT": "auto"},
			func(c app.Config) bool { return c.MaxInflightBodyBytes == 1<<30 && c.MemoryLimit == "auto" },
			"",
		},
		{
			"body budget below the body limit",
			append(base, "--max-inflight-body-bytes=1MiB"),
			nil,
			nil,
			"at least --max-body-bytes",
		},
		{"bad body budget", append(base, "--max-inflight-body-bytes=lots"), nil, nil, "max-inflight-body-bytes"},
		{"bad memory limit", append(base, "--memory-limit=90%"), nil, nil, "--memory-limit"},
		{
			"default ext_proc body deadline",
			base,
			nil,
			func(c app.Config) bool { return c.ExtProcBodyTimeout == 30*time.Second },
			"",
		},
		{"ext_proc body deadline", append(base, "--ext-proc-body-timeout=5s"), nil,
			func(c app.Config) bool { return c.ExtProcBodyTimeout == 5*time.Second }, ""},
		{
			"ext_proc body deadline off",
			append(base, "--ext-proc-body-timeout=0s"),
			nil,
			nil,
			"--ext-proc-body-timeout must be positive",
		},
		{
			"negative ext_proc body deadline",
			append(base, "--ext-proc-body-timeout=-1s"),
			nil,
			nil,
			"--ext-proc-body-timeout must be positive",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := app.ParseConfig(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("config %+v, err %v", c, err)
			}
		})
	}
	var out strings.Builder
	if _, err := app.ParseConfig(
		[]string{"--help"},
		func(string) string { return "" },
		&out,
	); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(out.String(), "-ext-proc-listen") {
		t.Fatalf("--help: err %v output %q", err, out.String())
	}
}

// Go's runtime profiles are on the metrics port only with --enable-pprof.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	off := startGateway(t, 1)
	on := startGateway(t, 1, "--enable-pprof")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
		if got := status(t, "http://"+off.MetricsAddr()+path); got != http.StatusNotFound {
			t.Errorf("without --enable-pprof: GET %s = %d, want 404", path, got)
		}
		if got := status(t, "http://"+on.MetricsAddr()+path); got != http.StatusOK {
			t.Errorf("with --enable-pprof: GET %s = %d, want 200", path, got)
		}
	}
}
