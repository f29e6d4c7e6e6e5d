package proxy_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// logBuffer is a bytes.Buffer safe for the server's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The HTTP server's own errors, such as a TLS handshake it refused, reach the gateway's
// structured log as records, not the standard logger's plain text.
func TestServerErrorsGoToTheStructuredLog(t *testing.T) {
	cert := httptest.NewUnstartedServer(nil) // only for its test certificate
	cert.StartTLS()
	certs := cert.TLS.Certificates
	cert.Close()
	var logs logBuffer
	e := newEnvWith(t, envOptions{tls: &tls.Config{Certificates: certs}, log: slog.New(slog.NewJSONHandler(&logs, nil))})
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
