package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// RegisterCluster stores a cluster registration if registration.revision is the stored revision
// (0: none stored yet); FailedPrecondition otherwise, InvalidArgument naming the field for an
// invalid registration (http:// gateway URLs only with AllowCleartextGateways).
func (s *Server) RegisterCluster(
	ctx context.Context,
	req *connect.Request[adminv1.RegisterClusterRequest],
) (*connect.Response[adminv1.RegisterClusterResponse], error) {
	r := req.Msg.GetRegistration()
	if r == nil {
		return nil, invalidField("registration", "is missing")
	}
	if r.GetCluster() == "" {
		return nil, invalidField("registration.cluster", "is required")
	}
	if err := configstore.ValidateRegistration(r, s.cfg.AllowCleartextGateways); err != nil {
		return nil, err // the message names the field
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	stored, err := s.deps.Registrations.PutRegistration(ctx, r, r.GetRevision(), s.cfg.AllowCleartextGateways)
	if err != nil {
		return nil, err
	}
	s.log.Info("cluster registered", "cluster", stored.GetCluster(), "region", stored.GetRegion(),
		"gateway_urls", stored.GetGatewayUrls(), "key_ids", stored.GetKeyIds(), "revision", stored.GetRevision())
	return connect.NewResponse(&adminv1.RegisterClusterResponse{Registration: stored}), nil
}

// RevokeCluster removes a cluster's registration; a non-zero revision must match the stored one.
func (s *Server) RevokeCluster(
	ctx context.Context,
	req *connect.Request[adminv1.RevokeClusterRequest],
) (*connect.Response[adminv1.RevokeClusterResponse], error) {
	name, rev := req.Msg.GetCluster(), req.Msg.GetRevision()
	if err := configstore.ValidateName("cluster", name); err != nil {
		return nil, invalidField("cluster", "%v", err)
	}
	if rev < 0 {
		return nil, invalidField("revision", "%d is negative", rev)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Registrations.DeleteRegistration(ctx, name, rev); err != nil {
		return nil, err
	}
	s.log.Info("cluster registration revoked", "cluster", name)
	return connect.NewResponse(&adminv1.RevokeClusterResponse{Cluster: name}), nil
}

// ListRegistrations returns every cluster registration, ordered by cluster, read from etcd, the
// identity mode this router applies, and every region registration.
func (s *Server) ListRegistrations(
	ctx context.Context,
	_ *connect.Request[adminv1.ListRegistrationsRequest],
) (*connect.Response[adminv1.ListRegistrationsResponse], error) {
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	rs, err := s.deps.Registrations.ListRegistrations(ctx)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListRegistrationsResponse{Registrations: rs, IdentityMode: s.deps.Identity.Mode()}
	if s.deps.Regions != nil {
		if resp.Regions, err = s.deps.Regions.ListRegionRegistrations(ctx); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(resp), nil
}

// RegisterRegion stores a region registration if registration.revision is the stored revision
// (0: none stored yet); FailedPrecondition otherwise, InvalidArgument naming the field for an
// invalid registration.
func (s *Server) RegisterRegion(
	ctx context.Context,
	req *connect.Request[adminv1.RegisterRegionRequest],
) (*connect.Response[adminv1.RegisterRegionResponse], error) {
	if s.deps.Regions == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errNoRegionStore)
	}
	r := req.Msg.GetRegistration()
	if r == nil {
		return nil, invalidField("registration", "is missing")
	}
	if r.GetRegion() == "" {
		return nil, invalidField("registration.region", "is required")
	}
	if err := configstore.ValidateRegionRegistration(r); err != nil {
		return nil, err // the message names the field
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	stored, err := s.deps.Regions.PutRegionRegistration(ctx, r, r.GetRevision())
	if err != nil {
		return nil, err
	}
	s.log.Info("region registered", "region", stored.GetRegion(), "key_ids", stored.GetKeyIds(),
		"revision", stored.GetRevision())
	return connect.NewResponse(&adminv1.RegisterRegionResponse{Registration: stored}), nil
}

// RevokeRegion removes a region's registration; a non-zero revision must match the stored one.
func (s *Server) RevokeRegion(
	ctx context.Context,
	req *connect.Request[adminv1.RevokeRegionRequest],
) (*connect.Response[adminv1.RevokeRegionResponse], error) {
	if s.deps.Regions == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errNoRegionStore)
	}
	name, rev := req.Msg.GetRegion(), req.Msg.GetRevision()
	if err := configstore.ValidateName("region", name); err != nil {
		return nil, invalidField("region", "%v", err)
	}
	if rev < 0 {
		return nil, invalidField("revision", "%d is negative", rev)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Regions.DeleteRegionRegistration(ctx, name, rev); err != nil {
		return nil, err
	}
	s.log.Info("region registration revoked", "region", name)
	return connect.NewResponse(&adminv1.RevokeRegionResponse{Region: name}), nil
}

// errNoRegionStore answers the region registration calls of a server built without a store of
// them.
var errNoRegionStore = errors.New("admin: region registrations are not served by this router")
