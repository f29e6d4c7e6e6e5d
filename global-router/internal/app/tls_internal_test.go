package app

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient/etcdclienttest"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// Forwarding to an https:// gateway behind a TLS listener that requires client certificates: the
// router's forwarder, configured from --gateway-ca-file, --gateway-cert-file and
// --gateway-key-file, is let in over HTTP/2; without the certificate, or without the CA, it is
// not.
func TestForwardToGatewayOverMutualTLS(t *testing.T) {
	files := etcdclienttest.Write(t)
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"proto":"` + r.Proto + `"}`))
	}))
	gw.TLS = &tls.Config{Certificates: []tls.Certificate{etcdclienttest.Pair(t, files.ServerCert, files.ServerKey)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: files.CAPool(t), MinVersion: tls.VersionTLS12}
	gw.EnableHTTP2 = true
	gw.StartTLS()
	t.Cleanup(gw.Close)

	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{
			"CA and client certificate",
			Config{GatewayCAFile: files.CA, GatewayCertFile: files.ClientCert, GatewayKeyFile: files.ClientKey},
			true,
		},
		{"CA without a client certificate", Config{GatewayCAFile: files.CA}, false},
		{
			"client certificate, gateway not trusted",
			Config{GatewayCertFile: files.ClientCert, GatewayKeyFile: files.ClientKey},
			false,
		},
		{"no TLS files", Config{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := tt.cfg.gatewayTLS()
			if err != nil {
				t.Fatal(err)
			}
			fc := forward.DefaultConfig()
			fc.TLS, fc.MaxAttempts = tc, 1
			f, err := forward.New(fc, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			body := []byte(`{"model":"m","prompt":"hi"}`)
			req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(string(body)))
			rec := httptest.NewRecorder()
			err = f.Forward(rec, req, body, []forward.Target{{Cluster: "c", Region: "r", URL: gw.URL, Route: "overflow"}}, nil)
			switch {
			case tt.ok && err != nil:
				t.Fatalf("forward: %v", err)
			case tt.ok && (rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"HTTP/2.0"`)):
				t.Fatalf("answer %d %s, want 200 over HTTP/2", rec.Code, rec.Body)
			case !tt.ok && err == nil:
				t.Fatalf("forwarded without the right TLS files: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// A missing TLS file is an error at start, naming the gateway TLS.
func TestGatewayTLSFileErrors(t *testing.T) {
	for _, cfg := range []Config{{GatewayCAFile: "/nonexistent/ca.crt"}, {GatewayCertFile: "/nonexistent/c", GatewayKeyFile: "/nonexistent/k"}} {
		if _, err := cfg.gatewayTLS(); err == nil || !strings.Contains(err.Error(), "gateway TLS") {
			t.Errorf("%+v: error %v, want one naming the gateway TLS", cfg, err)
		}
	}
}

// A missing certificate of a TLS port is an error at start, naming the port's flag.
func TestServerTLSFileErrors(t *testing.T) {
	tests := []struct {
		name string
		load func(*Config) (*tls.Config, error)
		cfg  Config
		want string
	}{
		{
			"--listen",
			(*Config).listenTLS,
			Config{TLSCertFile: "/nonexistent/c", TLSKeyFile: "/nonexistent/k"},
			"--tls-cert-file",
		},
		{
			"--admin-listen",
			(*Config).adminTLS,
			Config{AdminTLSCertFile: "/nonexistent/c", AdminTLSKeyFile: "/nonexistent/k"},
			"admin TLS",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.load(&tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}
