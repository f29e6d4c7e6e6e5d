package ctl_test

import (
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
)

// TestTLS: an https:// router is reached with the CA given by --ca-file, over every protocol;
// without it the certificate is not trusted.
func TestTLS(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewUnstartedServer(f.env.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	for _, proto := range []string{"connect", "grpc", "grpc-web"} {
		t.Run(proto, func(t *testing.T) {
			r := ctlRun("--addr="+srv.URL, f.tokenFile, "--ca-file="+ca, "--protocol="+proto, "clusters")
			if r.code != 0 || !strings.Contains(r.stdout, "c1") {
				t.Fatalf("clusters over TLS = %+v", r)
			}
		})
	}
	untrusted := ctlRun("--addr="+srv.URL, f.tokenFile, "clusters")
	if untrusted.code != ctl.ExitAPIError || !strings.Contains(untrusted.stderr, "certificate") {
		t.Fatalf("clusters without the CA = %+v, want a certificate error", untrusted)
	}
	badPair := ctlRun("--addr="+srv.URL, f.tokenFile, "--ca-file="+ca, "--cert-file="+ca, "clusters")
	if badPair.code != ctl.ExitUsage || !strings.Contains(badPair.stderr, "--key-file") {
		t.Fatalf("--cert-file without --key-file = %+v", badPair)
	}
}
