package admin

import (
	"context"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// DrainCluster stores a cluster's drain (drain = true) or removes it (drain = false). Every
// router watching the configuration applies it.
func (s *Server) DrainCluster(
	ctx context.Context,
	req *connect.Request[adminv1.DrainClusterRequest],
) (*connect.Response[adminv1.DrainClusterResponse], error) {
	name, drain := req.Msg.GetCluster(), req.Msg.GetDrain()
	if err := configstore.ValidateName("cluster", name); err != nil {
		return nil, invalidField("cluster", "%v", err)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Drains.SetClusterDrain(ctx, name, drain); err != nil {
		return nil, err
	}
	s.log.Info("cluster drain set", "cluster", name, "drained", drain)
	return connect.NewResponse(&adminv1.DrainClusterResponse{Cluster: name, Drained: drain}), nil
}

// DrainRegion stores a region's drain (drain = true) or removes it (drain = false).
func (s *Server) DrainRegion(
	ctx context.Context,
	req *connect.Request[adminv1.DrainRegionRequest],
) (*connect.Response[adminv1.DrainRegionResponse], error) {
	name, drain := req.Msg.GetRegion(), req.Msg.GetDrain()
	if err := configstore.ValidateName("region", name); err != nil {
		return nil, invalidField("region", "%v", err)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Drains.SetRegionDrain(ctx, name, drain); err != nil {
		return nil, err
	}
	s.log.Info("region drain set", "region", name, "drained", drain)
	return connect.NewResponse(&adminv1.DrainRegionResponse{Region: name, Drained: drain}), nil
}

// GetPolicy returns a model's stored policy with its revision; NotFound when none is stored,
// DataLoss naming the revision and the reason when the stored value cannot be read.
func (s *Server) GetPolicy(
	ctx context.Context,
	req *connect.Request[adminv1.GetPolicyRequest],
) (*connect.Response[adminv1.GetPolicyResponse], error) {
	if err := validateModel(req.Msg.GetModel()); err != nil {
		return nil, err
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	p, err := s.deps.Policies.GetPolicy(ctx, req.Msg.GetModel())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&adminv1.GetPolicyResponse{Policy: p}), nil
}

// PutPolicy stores a policy if policy.revision is the stored revision (0: none stored yet);
// FailedPrecondition otherwise, InvalidArgument naming the field for an invalid policy.
func (s *Server) PutPolicy(
	ctx context.Context,
	req *connect.Request[adminv1.PutPolicyRequest],
) (*connect.Response[adminv1.PutPolicyResponse], error) {
	p := req.Msg.GetPolicy()
	if p == nil {
		return nil, invalidField("policy", "is missing")
	}
	if err := validateModel(p.GetModel()); err != nil {
		return nil, err
	}
	if err := configstore.ValidatePolicy(p); err != nil {
		return nil, err // the message names the field
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	stored, err := s.deps.Policies.PutPolicy(ctx, p, p.GetRevision())
	if err != nil {
		return nil, err
	}
	s.log.Info("policy stored", "model", stored.GetModel(), "revision", stored.GetRevision())
	return connect.NewResponse(&adminv1.PutPolicyResponse{Policy: stored}), nil
}

// DeletePolicy removes a model's policy; a non-zero revision must match the stored one.
func (s *Server) DeletePolicy(
	ctx context.Context,
	req *connect.Request[adminv1.DeletePolicyRequest],
) (*connect.Response[adminv1.DeletePolicyResponse], error) {
	model, rev := req.Msg.GetModel(), req.Msg.GetRevision()
	if err := validateModel(model); err != nil {
		return nil, err
	}
	if rev < 0 {
		return nil, invalidField("revision", "%d is negative", rev)
	}
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	if err := s.deps.Policies.DeletePolicy(ctx, model, rev); err != nil {
		return nil, err
	}
	s.log.Info("policy deleted", "model", model)
	return connect.NewResponse(&adminv1.DeletePolicyResponse{Model: model}), nil
}

// ListPolicies returns every stored policy, ordered by model, and apart from them the stored
// values that cannot be read (their models are refused).
func (s *Server) ListPolicies(
	ctx context.Context,
	_ *connect.Request[adminv1.ListPoliciesRequest],
) (*connect.Response[adminv1.ListPoliciesResponse], error) {
	ctx, cancel := s.storeCtx(ctx)
	defer cancel()
	ps, bad, err := s.deps.Policies.ListPolicies(ctx)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListPoliciesResponse{Policies: ps}
	for _, u := range bad {
		resp.Unreadable = append(
			resp.Unreadable,
			&adminv1.UnreadablePolicy{Model: u.Model, Revision: u.Revision, Error: u.Reason},
		)
	}
	return connect.NewResponse(resp), nil
}

// validateModel checks a required model name; the error names the field "model".
func validateModel(model string) error {
	if model == "" {
		return invalidField("model", "is required")
	}
	if err := configstore.ValidateModel(model); err != nil {
		return invalidField("model", "%v", err)
	}
	return nil
}
