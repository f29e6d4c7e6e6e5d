package proxy_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// The HTTP server's own errors, such as a TLS handshake it refused, reach the gateway's
// structured log as records, not the standard logger's plain text.
func TestServerErrorsGoToTheStructuredLog(t *testing.T) {
	cert := httptest.NewUnstartedServer(nil) // only for its test certificate
	cert.StartTLS()
	certs := cert.TLS.Certificates
	cert.Close()
	logs := pipelinetest.NewLog()
	e := newEnvWith(t, envOptions{tls: &tls.Config{Certificates: certs}, log: logs.Logger})
	// A client that does not trust the test certificate gives up the handshake.
	if _, err := http.Get(e.url + "/v1/models"); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	poll.UntilState(t, 5*time.Second, func() (bool, string) {
		got := logs.String()
		return strings.Contains(got, "TLS handshake error"), strconv.Quote(got)
	}, "a TLS handshake error in the log")
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not a JSON record: %v", line, err)
		}
		if strings.Contains(rec.Msg, "TLS handshake error") && rec.Level != "WARN" {
			t.Fatalf("handshake error logged at %s, want WARN", rec.Level)
		}
	}
}
