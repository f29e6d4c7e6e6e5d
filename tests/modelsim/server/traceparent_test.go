package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEchoTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name, sent, want string
	}{
		{"echoed", tp, tp},
		{"absent", "", ""},
		{"too long", strings.Repeat("a", maxTraceparent+1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := echoTraceparent(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
			if tc.sent != "" {
				r.Header.Set("traceparent", tc.sent)
			}
			rec := httptest.NewRecorder()
			h(rec, r)
			if got := rec.Header().Get(HeaderTraceparent); got != tc.want {
				t.Errorf("echoed %q, want %q", got, tc.want)
			}
		})
	}
}
