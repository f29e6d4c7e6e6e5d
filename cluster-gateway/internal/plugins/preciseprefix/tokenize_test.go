package preciseprefix

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTokenizeAnswerBounded: a pod's /tokenize answer is read up to 8 bytes per byte of the
// request plus 64 KiB (a short prompt cannot be answered with megabytes of ids), and only the
// ids the hash chain uses are decoded.
func TestTokenizeAnswerBounded(t *testing.T) {
	ids := func(n int) string {
		return `{"count":1,"tokens":[` + strings.Repeat("7,", n-1) + `7],"max_model_len":8}`
	}
	tests := []struct {
		name    string
		request int // bytes of the request body
		answer  string
		limit   int
		want    int // ids returned, -1 for an error
	}{
		{"honest", 100, ids(50), 16, 16},
		{"short", 100, ids(5), 16, 5},
		{"empty", 100, `{"tokens":[]}`, 16, 0},
		{"huge answer to a short prompt", 20, ids(4 << 20), 1 << 30, -1},
		{"long answer, ids used", 1 << 20, ids(1 << 20), 16384, 16384},
		{"not integers", 100, `{"tokens":[1.5]}`, 16, -1},
		{"not an array", 100, `{"tokens":{"a":1}}`, 16, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(tt.answer))
			}))
			defer srv.Close()
			got, err := tokenize(context.Background(), srv.Client(), srv.URL+"/tokenize",
				[]byte(strings.Repeat("x", tt.request)), tt.limit)
			switch {
			case tt.want < 0 && err == nil:
				t.Fatalf("got %d ids, want an error", len(got))
			case tt.want >= 0 && (err != nil || len(got) != tt.want):
				t.Fatalf("got %d ids (%v), want %d", len(got), err, tt.want)
			case tt.want > 0 && (got[0] != 7 || got[len(got)-1] != 7 || cap(got) > max(tt.want, 64)):
				t.Fatalf("ids %v… (cap %d), want %d sevens", got[:1], cap(got), tt.want)
			}
		})
	}
}
