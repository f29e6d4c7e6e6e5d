package harness

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitServing(t *testing.T) {
	// A gateway's model list: empty for the first answers, as while it reads its pods' models.
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 3 {
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"test-model","object":"model"}]}`))
	}))
	defer srv.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer empty.Close()
	exitedProc := func() *Process {
		p := &Process{
			Name:    "gw",
			LogPath: filepath.Join(t.TempDir(), "gw.log"),
			exited:  make(chan struct{}),
			exitErr: errors.New("exit status 1"),
		}
		close(p.exited)
		return p
	}

	tests := []struct {
		name    string
		proc    *Process
		url     string
		timeout time.Duration
		wantErr string
	}{
		{
			name:    "serves once a model is listed",
			proc:    &Process{Name: "gw", exited: make(chan struct{})},
			url:     srv.URL,
			timeout: 30 * time.Second,
		},
		{
			name:    "never serves",
			proc:    &Process{Name: "gw", exited: make(chan struct{})},
			url:     empty.URL,
			timeout: 200 * time.Millisecond,
			wantErr: "served no model",
		},
		{
			name:    "exits first",
			proc:    exitedProc(),
			url:     "http://127.0.0.1:1/v1/models",
			timeout: 30 * time.Second,
			wantErr: "exited before it served a model",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.proc.waitServing(context.Background(), tt.url, tt.timeout)
			if tt.wantErr == "" {
				if err != nil || calls.Load() < 4 {
					t.Fatalf("waitServing: %v after %d polls, want nil after 4", err, calls.Load())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("waitServing: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}
