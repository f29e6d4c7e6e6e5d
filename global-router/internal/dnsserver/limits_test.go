package dnsserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnsserver"
)

// TestSilentTCPClientIsCutOff: a TCP client that connects and never sends a query loses the
// connection after the read timeout (2 s), so idle connections cannot pile up.
func TestSilentTCPClientIsCutOff(t *testing.T) {
	pc, l := listenBoth(t)
	s, err := dnsserver.New(localStack(), dnsserver.ReadinessFunc(func(string) bool { return true }), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	start := time.Now()
	if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent TCP connection still open after %v", time.Since(start))
	}
}
