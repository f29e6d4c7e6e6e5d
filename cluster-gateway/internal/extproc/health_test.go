package extproc_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// The health port answers GIE's services by the gateway's readiness, liveness by the process
// alone, and every service NOT_SERVING while the gateway drains; a request message larger than
// a service name needs is refused unread.
func TestHealthPort(t *testing.T) {
	var ready atomic.Bool
	cfg := extproc.DefaultHealthConfig()
	cfg.Ready, cfg.WatchInterval = ready.Load, 10*time.Millisecond
	h, err := extproc.NewHealth(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, drain := context.WithCancel(context.Background())
	defer drain()
	drained := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln, drained) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := client.Check(rctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatalf("Check(%q): %v", service, err)
		}
		return r.GetStatus()
	}
	watch, err := client.Watch(context.Background(), &healthpb.HealthCheckRequest{Service: extproc.HealthServiceGIE})
	if err != nil {
		t.Fatal(err)
	}
	expectWatch := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := watch.Recv()
		if err != nil || r.GetStatus() != want {
			t.Fatalf("Watch: %v, %v; want %v", r.GetStatus(), err, want)
		}
	}
	expectWatch(healthpb.HealthCheckResponse_NOT_SERVING)
	phases := []struct {
		name      string
		ready     bool
		drain     bool
		readiness healthpb.HealthCheckResponse_ServingStatus
		liveness  healthpb.HealthCheckResponse_ServingStatus
	}{
		{"not ready", false, false, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING},
		{"ready", true, false, healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_SERVING},
		{"draining", true, true, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_NOT_SERVING},
	}
	for _, p := range phases {
		t.Run(p.name, func(t *testing.T) {
			ready.Store(p.ready)
			if p.drain {
				drain()
				// The checks below fail if the drain is not seen in time.
				poll.Within(waitTimeout, func() bool { return check("") == healthpb.HealthCheckResponse_NOT_SERVING })
			}
			for _, svc := range extproc.HealthServices() {
				want := p.readiness
				if svc == extproc.HealthServiceLiveness {
					want = p.liveness
				}
				if got := check(svc); got != want {
					t.Errorf("Check(%q) = %v, want %v", svc, got, want)
				}
			}
			if p.name == "ready" {
				expectWatch(healthpb.HealthCheckResponse_SERVING)
			}
		})
	}
	expectWatch(healthpb.HealthCheckResponse_NOT_SERVING)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Check(rctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v, want NotFound", err)
	}
	// A request message of megabytes is refused unread; the connection still answers.
	huge := strings.Repeat("x", 1<<20)
	if _, err := client.Check(
		rctx,
		&healthpb.HealthCheckRequest{Service: huge},
	); status.Code(
		err,
	) != codes.ResourceExhausted {
		t.Errorf("a 1 MiB request: %v, want ResourceExhausted", err)
	}
	if _, err := client.Check(rctx, &healthpb.HealthCheckRequest{Service: extproc.HealthServiceLiveness}); err != nil {
		t.Errorf("after a refused request: %v", err)
	}
	list, err := client.List(rctx, &healthpb.HealthListRequest{})
	if err != nil || len(list.GetStatuses()) != len(extproc.HealthServices()) {
		t.Errorf("List: %v, %v", list, err)
	}
	close(drained)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return once drained")
	}
}
