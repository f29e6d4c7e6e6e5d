package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Go's runtime profiles are on the metrics port only with --enable-pprof.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	for _, tc := range []struct {
		enabled bool
		want    int
	}{{false, http.StatusNotFound}, {true, http.StatusOK}} {
		r := &Router{cfg: Config{EnablePprof: tc.enabled}, reg: prometheus.NewRegistry()}
		h := r.metricsHandler()
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != tc.want {
				t.Errorf("enabled=%v: GET %s = %d, want %d", tc.enabled, path, rec.Code, tc.want)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Errorf("enabled=%v: /metrics = %d", tc.enabled, rec.Code)
		}
	}
}
