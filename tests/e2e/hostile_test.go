package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// hostileBodyLimit is the --max-body-bytes the scenario gives both tiers, so an oversize body
// stays cheap to send.
const hostileBodyLimit = 1 << 20

// hostileCase is one bad or hostile input sent to one port.
type hostileCase struct {
	name string
	run  func(t *testing.T)
}

// hostilePort is a listening port of a process, the hostile cases it gets, and a check that it
// still serves a normal request.
type hostilePort struct {
	name   string
	addr   string
	serves func(t *testing.T)
	cases  []hostileCase
	// slowPath is the path a slowloris client asks for ("" = not an HTTP/1 port).
	slowPath string
}

// TestHostileInput sends bad and hostile input to every port of a gateway and a router: malformed
// and oversize bodies, header floods, garbage on the wire, client-supplied routing headers, admin
// calls without or with a wrong token or with invalid fields, a model outside its residency
// policy, and clients sending their headers one byte a second. Every case gets a clear refusal,
// and after every case the port still serves a normal request.
func TestHostileInput(t *testing.T) {
	w := newWorld(t)
	pod := w.Pod("h100")
	limit := fmt.Sprintf("--max-body-bytes=%d", hostileBodyLimit)
	// The pod is listed by name: x-switchyard-endpoint must show that name, never its address
	// or an address a client sent.
	gw := w.Gateway("east-a", "us-east-1", []string{hostilePodName + "=" + pod.Listen}, limit)
	rt := w.Router("us-east-1", "", limit)

	ports := []hostilePort{
		{name: "gateway --listen", addr: gw.Listen, serves: servesCompletion(gw.Listen), slowPath: "/v1/completions",
			cases: append(openAICases(gw.Listen), routingHeaderCase(gw.Listen, hostilePodName, false))},
		{name: "gateway --metrics-listen", addr: gw.Metrics, serves: servesMetrics(gw.Metrics), slowPath: "/metrics",
			cases: metricsCases(gw.Metrics)},
		{name: "gateway --ext-proc-listen", addr: gw.ExtProc, serves: servesGRPCHealth(gw.ExtProc),
			cases: extProcCases(gw.ExtProc)},
		{name: "router --listen", addr: rt.Listen, serves: servesCompletion(rt.Listen), slowPath: "/v1/completions",
			cases: append(openAICases(rt.Listen), routingHeaderCase(rt.Listen, hostilePodName, true),
				residencyCase(rt, gw))},
		{name: "router --admin-listen", addr: rt.Admin, serves: servesAdmin(rt.Admin, w.Token()),
			slowPath: "/switchyard.admin.v1.AdminService/ListClusters", cases: adminCases(rt.Admin, w.Token())},
		{name: "router --metrics-listen", addr: rt.Metrics, serves: servesMetrics(rt.Metrics), slowPath: "/metrics",
			cases: metricsCases(rt.Metrics)},
	}
	for _, p := range ports {
		t.Run(p.name, func(t *testing.T) {
			p.serves(t)
			for _, c := range p.cases {
				t.Run(c.name, c.run)
				t.Run(c.name+": still serves", p.serves)
			}
		})
	}
	// Slow clients take the header timeout each: run them on every port at once.
	t.Run("slow clients", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, p := range ports {
			wg.Go(func() {
				if p.slowPath != "" {
					t.Run(p.name+": slowloris", func(t *testing.T) { slowloris(t, p.addr, p.slowPath) })
				}
			})
		}
		wg.Wait()
		for _, p := range ports {
			t.Run(p.name+": still serves", p.serves)
		}
	})
}

// openAICases are the bad requests every OpenAI endpoint (gateway and router) must refuse.
func openAICases(addr string) []hostileCase {
	url := "http://" + addr + "/v1/completions"
	post := func(t *testing.T, body string) answer { return postJSON(t, url, strings.NewReader(body), nil) }
	over := strings.Repeat("x", hostileBodyLimit+1)
	cases := []hostileCase{
		{"malformed JSON", func(t *testing.T) { wantAPIError(t, post(t, `{"model":"test-model","prompt":`), 400, "", "") }},
		{"JSON that is not an object", func(t *testing.T) { wantAPIError(t, post(t, `["test-model"]`), 400, "", "") }},
		{
			"model of the wrong type",
			func(t *testing.T) { wantAPIError(t, post(t, `{"model":42,"prompt":"hi"}`), 400, "", "") },
		},
		{"empty body", func(t *testing.T) { wantAPIError(t, post(t, ``), 400, "", "") }},
		{
			"missing model",
			func(t *testing.T) { wantAPIError(t, post(t, `{"prompt":"hi","max_tokens":4}`), 400, "model", "") },
		},
		{"unknown model", func(t *testing.T) {
			wantAPIError(t, post(t, `{"model":"no-such-model","prompt":"hi","max_tokens":4}`), 404, "model", "model_not_found")
		}},
		{"deeply nested JSON", func(t *testing.T) {
			body := `{"model":"test-model","prompt":` + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + `}`
			if a := post(t, body); a.Status != 400 && a.Status != 200 {
				t.Fatalf("answer %s, want 400 (or a served request)", a)
			}
		}},
		{"body over the limit (Content-Length)", func(t *testing.T) {
			wantAPIError(t, post(t, `{"model":"test-model","prompt":"`+over+`"}`), 413, "", "request_too_large")
		}},
		{"body over the limit (chunked)", func(t *testing.T) {
			// io.MultiReader hides the length, so the body is sent chunked.
			body := ioMulti(`{"model":"test-model","prompt":"`, over, `"}`)
			wantAPIError(t, postJSON(t, url, body, nil), 413, "", "request_too_large")
		}},
		{"wrong method", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodDelete, url, nil)
			if a := send(t, req); a.Status != http.StatusMethodNotAllowed {
				t.Fatalf("answer %s, want 405", a)
			}
		}},
	}
	return append(cases, wireCases(addr, "POST", "/v1/completions")...)
}

// wireCases are malformed and flooded HTTP/1 requests: each must be refused with 4xx or a closed
// connection, promptly.
func wireCases(addr, method, path string) []hostileCase {
	var cases []hostileCase
	payloads := malformedRequests(method, path)
	for _, name := range sortedKeys(payloads) {
		payload := payloads[name]
		cases = append(cases, hostileCase{name, func(t *testing.T) {
			wantRefused(t, rawExchange(t, addr, payload, closeBound), "431", "400")
		}})
	}
	return cases
}

// hostilePodName is the name TestHostileInput gives its pod.
const hostilePodName = "vllm-east-a-0"

// routingHeaderCase sends a request that names a decoy destination, cluster, region and model in
// routing headers only Switchyard may set: the request must be served by the real pod (podName),
// and the decoy never dialled.
func routingHeaderCase(addr, podName string, viaRouter bool) hostileCase {
	return hostileCase{"client-supplied routing headers", func(t *testing.T) {
		d := newDecoy(t)
		hdr := map[string]string{
			"X-Gateway-Destination-Endpoint":        d.Addr(),
			"X-Gateway-Destination-Endpoint-Subset": d.Addr(),
			"X-Gateway-Model-Name":                  "no-such-model",
			"X-Gateway-Base-Model-Name":             "no-such-model",
			"X-Switchyard-Endpoint":                 d.Addr(),
			"X-Switchyard-Cluster":                  "elsewhere",
			"X-Switchyard-Region":                   "mars-1",
			"X-Switchyard-Route":                    "overflow",
		}
		a := postJSON(t, "http://"+addr+"/v1/completions", strings.NewReader(completionBody(4)), hdr)
		if a.Status != http.StatusOK {
			t.Fatalf("answer %s, want 200", a)
		}
		want := map[string]string{
			"X-Switchyard-Cluster":  "east-a",
			"X-Switchyard-Region":   "us-east-1",
			"X-Switchyard-Endpoint": podName,
		}
		if viaRouter {
			want["X-Switchyard-Route"] = "local"
		}
		for k, v := range want {
			if got := a.Header.Get(k); got != v {
				t.Errorf("response %s = %q, want %q", k, got, v)
			}
		}
		if n := d.dials.Load(); n != 0 {
			t.Errorf("the decoy named in a client header was dialled %d times", n)
		}
	}}
}

// residencyCase stores a policy that allows the model only in a region with no cluster, and checks
// that the router answers 503 with the explanation and sends nothing to the gateway.
func residencyCase(rt, gw *node) hostileCase {
	return hostileCase{"model outside its residency policy", func(t *testing.T) {
		auth := "Bearer " + rt.World().Token()
		put := sprintf(`{"policy":{"model":%q,"allowed_regions":["eu-west-1"]}}`, testModel)
		if st, code, msg := adminCall(t, rt.Admin, "PutPolicy", auth, put); st != http.StatusOK {
			t.Fatalf("PutPolicy: %d %s %s", st, code, msg)
		}
		t.Cleanup(func() {
			if st, code, msg := adminCall(
				t,
				rt.Admin,
				"DeletePolicy",
				auth,
				sprintf(`{"model":%q}`, testModel),
			); st != http.StatusOK {
				t.Errorf("DeletePolicy: %d %s %s", st, code, msg)
			}
		})
		url := "http://" + rt.Listen + "/v1/completions"
		poll.UntilState(t, 10*time.Second, func() (bool, string) {
			a := postJSON(t, url, strings.NewReader(completionBody(4)), nil)
			return a.Status == http.StatusServiceUnavailable, a.String()
		}, "the policy applied")
		before := metricValue(t, gw.Metrics, "switchyard_gateway_requests_total")
		for range 3 {
			a := postJSON(t, url, strings.NewReader(completionBody(4)), nil)
			e := wantAPIError(t, a, http.StatusServiceUnavailable, "", "residency_policy")
			if !strings.Contains(e.Error.Message, testModel) || !strings.Contains(e.Error.Message, "policy") {
				t.Errorf("503 does not explain the residency refusal: %q", e.Error.Message)
			}
			if c := a.Header.Get("X-Switchyard-Cluster"); c != "" {
				t.Errorf("refused request names serving cluster %q", c)
			}
		}
		if after := metricValue(t, gw.Metrics, "switchyard_gateway_requests_total"); after != before {
			t.Errorf("the gateway outside the policy got %v requests while the policy forbade it", after-before)
		}
	}}
}

// metricsCases are hostile requests to a /metrics, /healthz, /readyz port.
func metricsCases(addr string) []hostileCase {
	cases := []hostileCase{
		{"wrong method", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/metrics", strings.NewReader("x"))
			if a := send(t, req); a.Status != http.StatusMethodNotAllowed {
				t.Fatalf("answer %s, want 405", a)
			}
		}},
		{"unknown path", func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/"+strings.Repeat("a/", 2000), nil)
			if a := send(t, req); a.Status != http.StatusNotFound {
				t.Fatalf("answer %s, want 404", a)
			}
		}},
	}
	return append(cases, wireCases(addr, "GET", "/metrics")...)
}

// adminCases are unauthenticated and invalid admin calls.
func adminCases(addr, token string) []hostileCase {
	good := "Bearer " + token
	wantCode := func(t *testing.T, method, auth, body string, status int, code, field string) {
		t.Helper()
		st, c, msg := adminCall(t, addr, method, auth, body)
		if st != status || c != code {
			t.Fatalf("%s: %d %s %q, want %d %s", method, st, c, msg, status, code)
		}
		if field != "" && !strings.Contains(msg, field) {
			t.Errorf("%s: message %q does not name the field %s", method, msg, field)
		}
	}
	cases := []hostileCase{
		{"no token", func(t *testing.T) { wantCode(t, "ListClusters", "", `{}`, 401, "unauthenticated", "") }},
		{"wrong token", func(t *testing.T) {
			wantCode(t, "ListClusters", "Bearer not-the-token", `{}`, 401, "unauthenticated", "")
		}},
		{"wrong scheme", func(t *testing.T) {
			wantCode(t, "DrainRegion", "Basic "+token, `{"region":"us-east-1","drain":true}`, 401, "unauthenticated", "")
		}},
		{"no token over gRPC", func(t *testing.T) {
			if st, _ := grpcCall(t, addr, "/switchyard.admin.v1.AdminService/ListClusters", nil, nil); st != "16" {
				t.Fatalf("grpc-status %q, want 16 (UNAUTHENTICATED)", st)
			}
		}},
		{"policy with an out-of-range field", func(t *testing.T) {
			wantCode(
				t,
				"PutPolicy",
				good,
				`{"policy":{"model":"m1","overflow_threshold":7}}`,
				400,
				"invalid_argument",
				"overflow_threshold",
			)
		}},
		{"policy with an invalid region", func(t *testing.T) {
			wantCode(
				t,
				"PutPolicy",
				good,
				`{"policy":{"model":"m1","allowed_regions":["us-east-1","no such region!"]}}`,
				400,
				"invalid_argument",
				"allowed_regions[1]",
			)
		}},
		{"policy without a model", func(t *testing.T) {
			wantCode(t, "PutPolicy", good, `{"policy":{"overflow_threshold":0.5}}`, 400, "invalid_argument", "model")
		}},
		{"drain without a cluster", func(t *testing.T) {
			wantCode(t, "DrainCluster", good, `{"cluster":"","drain":true}`, 400, "invalid_argument", "cluster")
		}},
		{"drain of an invalid region name", func(t *testing.T) {
			wantCode(t, "DrainRegion", good, `{"region":"../../etc","drain":true}`, 400, "invalid_argument", "region")
		}},
		{"malformed JSON", func(t *testing.T) {
			if st, c, msg := adminCall(t, addr, "PutPolicy", good, `{"policy":`); st != 400 || c != "invalid_argument" {
				t.Fatalf("%d %s %q, want 400 invalid_argument", st, c, msg)
			}
		}},
		{"message over the limit", func(t *testing.T) {
			body := `{"model":"m1","prompt":"` + strings.Repeat("x", 9<<20) + `"}`
			if st, c, msg := adminCall(t, addr, "ExplainRoute", good, body); c != "resource_exhausted" {
				t.Fatalf("%d %s %q, want a refusal (resource_exhausted)", st, c, msg)
			}
		}},
		{"unknown method", func(t *testing.T) {
			if st, _, _ := adminCall(t, addr, "DropEverything", good, `{}`); st != http.StatusNotFound {
				t.Fatalf("status %d, want 404", st)
			}
		}},
	}
	return append(cases, wireCases(addr, "POST", "/switchyard.admin.v1.AdminService/ListClusters")...)
}

// servesAdmin returns a check that the admin API answers ListClusters with the token.
func servesAdmin(addr, token string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		st, code, body := adminCall(t, addr, "ListClusters", "Bearer "+token, `{}`)
		if st != http.StatusOK || !strings.Contains(body, "east-a") {
			t.Fatalf("ListClusters: %d %s %s", st, code, body)
		}
	}
}

// extProcCases are hostile inputs to the gateway's ext_proc gRPC port.
func extProcCases(addr string) []hostileCase {
	const process = "/envoy.service.ext_proc.v3.ExternalProcessor/Process"
	return []hostileCase{
		{"garbage bytes", func(t *testing.T) {
			rawExchange(t, addr, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 1000), closeBound)
		}},
		{"an HTTP/1 request", func(t *testing.T) {
			got := rawExchange(
				t,
				addr,
				[]byte("POST "+process+" HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"),
				closeBound,
			)
			if strings.HasPrefix(got, "HTTP/1.1 2") {
				t.Errorf("an HTTP/1 request got %q", firstLine([]byte(got)))
			}
		}},
		{"a message that is not protobuf", func(t *testing.T) {
			st, _ := grpcCall(t, addr, process, bytes.Repeat([]byte{0xff}, 64), nil)
			if st == "" || st == "0" {
				t.Fatalf("grpc-status %q, want an error", st)
			}
		}},
		{"a message over the size limit", func(t *testing.T) {
			st, _ := grpcCall(t, addr, process, make([]byte, 5<<20), nil)
			if st == "" || st == "0" {
				t.Fatalf("grpc-status %q, want an error (RESOURCE_EXHAUSTED)", st)
			}
		}},
		{"unknown method", func(t *testing.T) {
			if st, _ := grpcCall(t, addr, "/envoy.service.ext_proc.v3.ExternalProcessor/Nope", nil, nil); st != "12" {
				t.Fatalf("grpc-status %q, want 12 (UNIMPLEMENTED)", st)
			}
		}},
		{"a stalled connection does not block others", func(t *testing.T) {
			// Half an HTTP/2 preface, then silence; health must answer meanwhile.
			conn := dialRaw(t, addr)
			if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n")); err != nil {
				t.Fatal(err)
			}
			servesGRPCHealth(addr)(t)
		}},
	}
}
