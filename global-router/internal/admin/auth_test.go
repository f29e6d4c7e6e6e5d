package admin_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

// headerInterceptor sets the Authorization header verbatim (none when empty).
type headerInterceptor string

func (h headerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if h != "" {
			req.Header().Set("Authorization", string(h))
		}
		return next(ctx, req)
	}
}

func (h headerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if h != "" {
			conn.RequestHeader().Set("Authorization", string(h))
		}
		return conn
	}
}

func (h headerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		header string
		want   connect.Code // 0: accepted
	}{
		{"no token", "", connect.CodeUnauthenticated},
		{"wrong token", "Bearer not-the-token", connect.CodeUnauthenticated},
		{"token prefix", "Bearer " + admintest.Token[:5], connect.CodeUnauthenticated},
		{"token as basic auth", "Basic " + admintest.Token, connect.CodeUnauthenticated},
		{"bearer without token", "Bearer ", connect.CodeUnauthenticated},
		{"right token", "Bearer " + admintest.Token, 0},
		{"scheme in lower case", "bearer " + admintest.Token, 0},
	}
	for _, tt := range tests {
		for _, opt := range []struct {
			name string
			opt  connect.ClientOption
		}{{"connect", connect.WithProtoJSON()}, {"grpc", connect.WithGRPC()}, {"grpc-web", connect.WithGRPCWeb()}} {
			t.Run(tt.name+"/"+opt.name, func(t *testing.T) {
				c := adminv1connect.NewAdminServiceClient(
					e.Server.Client(),
					e.Server.URL,
					opt.opt,
					connect.WithInterceptors(headerInterceptor(tt.header)),
				)
				checkUnary(t, c, tt.want)
				checkStream(t, c, tt.want)
			})
		}
	}
	if n := callCount(t, e, "ListClusters", "unauthenticated"); n < 15 {
		t.Errorf("unauthenticated ListClusters counted %v, want >= 15", n)
	}
}

func checkUnary(t *testing.T, c adminv1connect.AdminServiceClient, want connect.Code) {
	t.Helper()
	_, err := c.ListClusters(testCtx(t), connect.NewRequest(&adminv1.ListClustersRequest{}))
	if want == 0 {
		if err != nil {
			t.Fatalf("unary call rejected: %v", err)
		}
		return
	}
	wantCode(t, err, want)
}

func checkStream(t *testing.T, c adminv1connect.AdminServiceClient, want connect.Code) {
	t.Helper()
	stream, err := c.WatchClusters(testCtx(t), connect.NewRequest(&adminv1.WatchClustersRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	got := stream.Receive()
	switch {
	case want == 0 && !got:
		t.Fatalf("stream rejected: %v", stream.Err())
	case want == 0 && len(stream.Msg().GetClusters()) != 2:
		t.Fatalf("stream's first message = %v, want both clusters", stream.Msg())
	case want != 0 && got:
		t.Fatalf("stream without the right token sent %v", stream.Msg())
	case want != 0:
		wantCode(t, stream.Err(), want)
	}
}

// TestHealthNeedsNoToken: load balancers probe health over the Connect protocol on HTTP/1.1
// without the token.
func TestHealthNeedsNoToken(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Post(e.Server.URL+"/grpc.health.v1.Health/Check", "application/json",
		stringsReader(`{"service":"switchyard.admin.v1.AdminService"}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || body != `{"status":"SERVING_STATUS_SERVING"}` {
		t.Fatalf("health check = %d %s", resp.StatusCode, body)
	}
}
