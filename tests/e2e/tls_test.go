package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestMutualTLSAcrossRegions runs the real binaries with mutual TLS on every data-path hop: a
// gateway in each of two regions serves --listen over TLS, requires client certificates and
// advertises an https:// URL; the router forwards to them with the CA and a client certificate
// (--gateway-ca-file, --gateway-cert-file, --gateway-key-file) and serves its own --listen over
// TLS with client certificates required. A client with a certificate streams chat completions
// through the router: to the local cluster, then, with it drained, to the other region's
// (route overflow). A client without a certificate is refused by a gateway and by the router.
func TestMutualTLSAcrossRegions(t *testing.T) {
	w := newWorld(t)
	pki := newPKI(t, t.TempDir())
	serveTLS := []string{
		"--tls-cert-file=" + pki.ServerCert,
		"--tls-key-file=" + pki.ServerKey,
		"--tls-client-ca-file=" + pki.CA,
	}
	east := w.Gateway("east-a", "us-east-1", []string{w.Pod("h100").Listen}, serveTLS...)
	w.Gateway("west-a", "us-west-2", []string{w.Pod("h100").Listen}, serveTLS...)
	router := w.Router("us-east-1", "", append(serveTLS, "--gateway-ca-file="+pki.CA,
		"--gateway-cert-file="+pki.ClientCert, "--gateway-key-file="+pki.ClientKey)...)
	waitRouterKnows(t, w, router, "east-a", "west-a")

	client := pki.Client(t, true)
	waitChatRoute(t, client, router, "east-a", "us-east-1", "local")
	mustRunCtl(t, w, router, "drain", "east-a")
	waitChatRoute(t, client, router, "west-a", "us-west-2", "overflow")

	// Under TLS 1.3 the server refuses the missing certificate after the client's side of the
	// handshake is done, so the client sees the alert or a closed connection, whichever comes first.
	anonymous := pki.Client(t, false)
	for name, addr := range map[string]string{"gateway east-a": east.Listen, "router": router.Listen} {
		if resp, err := anonymous.Get("https://" + addr + "/v1/models"); err == nil {
			resp.Body.Close()
			t.Errorf("%s answered a client without a certificate: %d", name, resp.StatusCode)
		}
	}
}

// waitChatRoute streams chat completions through router over TLS until one is served by cluster
// (within 10 s), and checks that answer: 200 over HTTP/2, the whole event stream, and the
// cluster, region and route headers.
func waitChatRoute(t *testing.T, client *http.Client, router *node, cluster, region, route string) {
	t.Helper()
	body := `{"model":"` + testModel + `","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"Say hello"}]}`
	var a answer
	var proto string
	// Past the bound, the checks below fail on the last answer.
	poll.Within(10*time.Second, func() bool {
		resp, err := client.Post("https://"+router.Listen+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("chat completion over TLS: %v\n%s", err, router.Log())
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		a, proto = answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, resp.Proto
		return a.Header.Get("X-Switchyard-Cluster") == cluster
	})
	h := a.Header
	if a.Status != http.StatusOK || proto != "HTTP/2.0" || h.Get("X-Switchyard-Cluster") != cluster ||
		h.Get("X-Switchyard-Region") != region || h.Get("X-Switchyard-Route") != route {
		t.Fatalf("%s: served by %q/%q route %q, want %s/%s %s: %s", proto, h.Get("X-Switchyard-Cluster"),
			h.Get("X-Switchyard-Region"), h.Get("X-Switchyard-Route"), cluster, region, route, a)
	}
	if !bytes.Contains(a.Body, []byte(`"delta"`)) || !bytes.HasSuffix(a.Body, []byte("data: [DONE]\n\n")) {
		t.Fatalf("incomplete event stream: %q", a.Body)
	}
}
