package admin

import (
	"context"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// GetTenant returns a tenant's stored limits, read from etcd: NotFound when none are stored,
// DataLoss when the stored value cannot be read.
func (s *Server) GetTenant(
	ctx context.Context,
	req *connect.Request[adminv1.GetTenantRequest],
) (*connect.Response[adminv1.GetTenantResponse], error) {
	name := req.Msg.GetName()
	if err := configstore.ValidateName("tenant", name); err != nil {
		return nil, invalidField("name", "%v", err)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	t, err := s.deps.Tenants.GetTenant(ctx, name)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&adminv1.GetTenantResponse{Tenant: t}), nil
}

// PutTenant stores a tenant if tenant.revision is the stored revision (0: none stored yet);
// FailedPrecondition otherwise, InvalidArgument naming the field for invalid limits, an invalid
// name or an API key digest another tenant holds.
func (s *Server) PutTenant(
	ctx context.Context,
	req *connect.Request[adminv1.PutTenantRequest],
) (*connect.Response[adminv1.PutTenantResponse], error) {
	t := req.Msg.GetTenant()
	if t == nil {
		return nil, invalidField("tenant", "is missing")
	}
	if err := configstore.ValidateTenant(t); err != nil {
		return nil, err // the message names the field
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	stored, err := s.deps.Tenants.PutTenant(ctx, t, t.GetRevision())
	if err != nil {
		return nil, err
	}
	// The digests are not logged: they identify keys.
	s.log.Info("tenant stored", "tenant", stored.GetName(), "tokens_per_minute", stored.GetTokensPerMinute(),
		"requests_per_second", stored.GetRequestsPerSecond(), "max_concurrent", stored.GetMaxConcurrent(),
		"api_keys", len(stored.GetApiKeySha256()), "revision", stored.GetRevision())
	return connect.NewResponse(&adminv1.PutTenantResponse{Tenant: stored}), nil
}

// DeleteTenant removes a tenant; a non-zero revision must match the stored one.
func (s *Server) DeleteTenant(
	ctx context.Context,
	req *connect.Request[adminv1.DeleteTenantRequest],
) (*connect.Response[adminv1.DeleteTenantResponse], error) {
	name, rev := req.Msg.GetName(), req.Msg.GetRevision()
	if err := configstore.ValidateName("tenant", name); err != nil {
		return nil, invalidField("name", "%v", err)
	}
	if rev < 0 {
		return nil, invalidField("revision", "%d is negative", rev)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Tenants.DeleteTenant(ctx, name, rev); err != nil {
		return nil, err
	}
	s.log.Info("tenant deleted", "tenant", name)
	return connect.NewResponse(&adminv1.DeleteTenantResponse{Name: name}), nil
}

// ListTenants returns every stored tenant, ordered by name, read from etcd.
func (s *Server) ListTenants(
	ctx context.Context,
	_ *connect.Request[adminv1.ListTenantsRequest],
) (*connect.Response[adminv1.ListTenantsResponse], error) {
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	ts, err := s.deps.Tenants.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&adminv1.ListTenantsResponse{Tenants: ts}), nil
}
