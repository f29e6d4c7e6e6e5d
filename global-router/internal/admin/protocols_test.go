package admin_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

// TestGRPCAndConnectOnOnePort: a grpc-go client and Connect clients (Connect and gRPC-Web over
// HTTP/1.1) call the same server.
func TestGRPCAndConnectOnOnePort(t *testing.T) {
	e := newEnv(t)
	conn := grpcConn(t, e)
	gc := adminv1.NewAdminServiceClient(conn)
	authed := metadata.AppendToOutgoingContext(testCtx(t), "authorization", "Bearer "+admintest.Token)

	resp, err := gc.ListClusters(authed, &adminv1.ListClustersRequest{})
	if err != nil || len(resp.GetClusters()) != 2 {
		t.Fatalf("grpc ListClusters = %v, %v", resp, err)
	}
	if _, err := gc.ListClusters(testCtx(t), &adminv1.ListClustersRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("grpc ListClusters without a token = %v, want Unauthenticated", err)
	}
	if _, err := gc.GetPolicy(authed, &adminv1.GetPolicyRequest{Model: "none"}); status.Code(err) != codes.NotFound {
		t.Fatalf("grpc GetPolicy of a missing policy = %v, want NotFound", err)
	}
	stream, err := gc.WatchClusters(authed, &adminv1.WatchClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := stream.Recv(); err != nil || len(first.GetClusters()) != 2 {
		t.Fatalf("grpc WatchClusters first message = %v, %v", first, err)
	}

	plain := &http.Client{} // HTTP/1.1 only
	for name, opts := range map[string][]connect.ClientOption{
		"connect-json": {connect.WithProtoJSON()},
		"connect":      nil,
		"grpc-web":     {connect.WithGRPCWeb()},
	} {
		t.Run(name, func(t *testing.T) {
			opts = append(opts, connect.WithInterceptors(admintest.WithToken(admintest.Token)))
			c := adminv1connect.NewAdminServiceClient(plain, e.Server.URL, opts...)
			resp, err := c.ListMembers(testCtx(t), connect.NewRequest(&adminv1.ListMembersRequest{}))
			if err != nil || len(resp.Msg.GetMembers()) == 0 {
				t.Fatalf("ListMembers = %v, %v", resp, err)
			}
		})
	}
}

func grpcConn(t *testing.T, e *admintest.Env) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(
		strings.TrimPrefix(e.Server.URL, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestReflectionAndHealthOverGRPC: grpcurl-style discovery (reflection v1 and v1alpha) and the
// gRPC health check.
func TestReflectionAndHealthOverGRPC(t *testing.T) {
	e := newEnv(t)
	conn := grpcConn(t, e)
	ctx := testCtx(t)
	h, err := healthpb.NewHealthClient(conn).
		Check(ctx, &healthpb.HealthCheckRequest{Service: adminv1connect.AdminServiceName})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", h, err)
	}

	v1, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Send(
		&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}},
	); err != nil {
		t.Fatal(err)
	}
	got, err := v1.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, adminv1connect.AdminServiceName) || !slices.Contains(names, "grpc.health.v1.Health") {
		t.Fatalf("reflection v1 lists %v, want %s and grpc.health.v1.Health", names, adminv1connect.AdminServiceName)
	}
	if err := v1.Send(
		&reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{
				FileContainingSymbol: "grpc.health.v1.Health",
			},
		},
	); err != nil {
		t.Fatal(err)
	}
	if fd, err := v1.Recv(); err != nil || len(fd.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Fatalf("reflection v1 file of the health service = %v, %v", fd, err)
	}
	if err := v1.Send(
		&reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{
				FileContainingSymbol: adminv1connect.AdminServiceName,
			},
		},
	); err != nil {
		t.Fatal(err)
	}
	if fd, err := v1.Recv(); err != nil || len(fd.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Fatalf("reflection v1 file of the service = %v, %v", fd, err)
	}

	alpha, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // v1alpha is deprecated, and still what older clients (grpcurl, Postman) speak
	if err := alpha.Send(
		&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}},
	); err != nil {
		t.Fatal(err)
	}
	ga, err := alpha.Recv()
	//nolint:staticcheck // as above
	//nolint:staticcheck // as above
	if err != nil || len(ga.GetListServicesResponse().GetService()) != 2 ||
		ga.GetListServicesResponse().GetService()[0].GetName() != adminv1connect.AdminServiceName {
		t.Fatalf("reflection v1alpha = %v, %v", ga, err)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
