package app_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/app"
	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient/etcdclienttest"
)

// TestListenOverMutualTLS serves a real router's OpenAI port over TLS with client certificates
// required: a client with the CA and a client certificate streams a chat completion through it
// to a gateway over HTTP/2 and over HTTP/1.1; a client without a certificate, one that does not
// trust the server, and plain HTTP are refused. The metrics port stays plain HTTP.
func TestListenOverMutualTLS(t *testing.T) {
	e := newEnv(t)
	files := etcdclienttest.Write(t)
	r := startRouterWith(t, e, "router-listen-tls", func(c *app.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile = files.ServerCert, files.ServerKey, files.CA
	}) // waits for /readyz on the plain metrics port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.waitChosen(ctx, e.preferred, time.Now()); err != nil {
		t.Fatal(err)
	}
	base := "https://" + r.cfg.Listen
	roots, cert := files.CAPool(t), []tls.Certificate{etcdclienttest.Pair(t, files.ClientCert, files.ClientKey)}
	for _, c := range []struct {
		proto string
		h2    bool
	}{{"HTTP/2.0", true}, {"HTTP/1.1", false}} {
		resp, err := tlsClient(roots, cert, c.h2).Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatalf("%s over mutual TLS: %v", c.proto, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Proto != c.proto || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
			t.Fatalf("%s over mutual TLS: %s %d %q", c.proto, resp.Proto, resp.StatusCode, body)
		}
		if got, route := resp.Header.Get(
			"X-Switchyard-Cluster",
		), resp.Header.Get(
			"X-Switchyard-Route",
		); got != e.preferred ||
			route != "local" {
			t.Errorf("%s: served by %q route %q, want %s local", c.proto, got, route, e.preferred)
		}
	}
	// Under TLS 1.3 the server refuses a missing client certificate after the client's side of
	// the handshake is done, so that client sees the alert or a closed connection, whichever
	// comes first (errHas ""); a client that does not trust the server fails verifying it.
	for _, c := range []struct {
		name, url string
		client    *http.Client
		errHas    string
	}{
		{"no client certificate", base + "/v1/models", tlsClient(roots, nil, true), ""},
		{"server not trusted", base + "/v1/models", tlsClient(nil, cert, true), "certificate"},
		{"plain HTTP", "http://" + r.cfg.Listen + "/v1/models", http.DefaultClient, ""},
	} {
		resp, err := c.client.Get(c.url)
		switch {
		case err == nil:
			resp.Body.Close()
			if strings.HasPrefix(c.url, "https://") || resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: answered %d, want it refused", c.name, resp.StatusCode)
			}
		case !strings.Contains(err.Error(), c.errHas):
			t.Errorf("%s: error %v, want one about the %s", c.name, err, c.errHas)
		}
	}
	waitHTTP(t, "http://"+r.cfg.MetricsListen+"/healthz", http.StatusOK, r.done)
}
