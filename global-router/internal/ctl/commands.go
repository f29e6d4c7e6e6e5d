package ctl

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// command runs one parsed command.
type command func(ctx context.Context, c *caller) error

// prepare checks the command's operands and flags and returns the command to run.
func (inv *invocation) prepare() (command, error) {
	switch inv.name {
	case "clusters":
		return inv.clusters()
	case "drain", "undrain":
		return inv.drainCluster(inv.name == "drain")
	case "drain-region", "undrain-region":
		return inv.drainRegion(inv.name == "drain-region")
	case "policy get":
		return inv.policyGet()
	case "policy put":
		return inv.policyPut()
	case "policy delete":
		return inv.policyDelete()
	case "policy list":
		return inv.policyList()
	case "explain":
		return inv.explain()
	case "members":
		return inv.members()
	case "register-cluster":
		return inv.registerCluster()
	case "revoke-cluster":
		return inv.revokeCluster()
	case "registrations":
		return inv.registrations()
	case "register-region":
		return inv.registerRegion()
	case "revoke-region":
		return inv.revokeRegion()
	case "tenant set":
		return inv.tenantSet()
	case "tenant get":
		return inv.tenantGet()
	case "tenant delete":
		return inv.tenantDelete()
	case "tenant list":
		return inv.tenantList()
	}
	return nil, errors.New("unknown command") // parse accepts only the commands above
}

// unary wraps one unary call: it builds the client, bounds the call and prints its result.
func unary[Req any, Resp any, PResp interface {
	*Resp
	proto.Message
}](req *Req, call func(adminClient, context.Context, *connect.Request[Req]) (*connect.Response[Resp], error),
	table func(*caller, *Resp) error) command {
	return func(ctx context.Context, c *caller) error {
		cl, err := c.client()
		if err != nil {
			return err
		}
		ctx, cancel := c.callCtx(ctx)
		defer cancel()
		resp, err := call(cl, ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		return c.print(PResp(resp.Msg), func() error { return table(c, resp.Msg) })
	}
}

func (inv *invocation) clusters() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	if inv.watch {
		req := &adminv1.WatchClustersRequest{Model: inv.model, IntervalMs: uint32(inv.interval / time.Millisecond)}
		return func(ctx context.Context, c *caller) error { return c.watchClusters(ctx, req) }, nil
	}
	if inv.set["interval"] {
		return nil, errors.New("--interval goes with --watch")
	}
	return unary(&adminv1.ListClustersRequest{Model: inv.model}, adminClient.ListClusters, (*caller).clusterTable), nil
}

func (inv *invocation) drainCluster(drain bool) (command, error) {
	name, err := inv.operand("CLUSTER", false)
	if err != nil {
		return nil, err
	}
	return unary(
		&adminv1.DrainClusterRequest{Cluster: name, Drain: drain},
		adminClient.DrainCluster,
		(*caller).drainedCluster,
	), nil
}

func (inv *invocation) drainRegion(drain bool) (command, error) {
	name, err := inv.operand("REGION", false)
	if err != nil {
		return nil, err
	}
	return unary(
		&adminv1.DrainRegionRequest{Region: name, Drain: drain},
		adminClient.DrainRegion,
		(*caller).drainedRegion,
	), nil
}

func (inv *invocation) policyGet() (command, error) {
	model, err := inv.operand("MODEL", true)
	if err != nil {
		return nil, err
	}
	return unary(&adminv1.GetPolicyRequest{Model: model}, adminClient.GetPolicy, (*caller).policyDetail), nil
}

func (inv *invocation) policyPut() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	// The policy is built when the command runs, so a file on stdin is read only then.
	return func(ctx context.Context, c *caller) error {
		p, err := inv.policyFromFlags()
		if err != nil {
			return err
		}
		return unary(&adminv1.PutPolicyRequest{Policy: p}, adminClient.PutPolicy, (*caller).policyStored)(ctx, c)
	}, nil
}

func (inv *invocation) policyDelete() (command, error) {
	model, err := inv.operand("MODEL", true)
	if err != nil {
		return nil, err
	}
	req := &adminv1.DeletePolicyRequest{Model: model, Revision: inv.revision}
	return unary(req, adminClient.DeletePolicy, (*caller).policyDeleted), nil
}

func (inv *invocation) policyList() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	return unary(&adminv1.ListPoliciesRequest{}, adminClient.ListPolicies, (*caller).policyTable), nil
}

func (inv *invocation) explain() (command, error) {
	model, err := inv.operand("--model", true)
	if err != nil {
		return nil, err
	}
	req := &adminv1.ExplainRouteRequest{
		Model:        model,
		Prompt:       inv.prompt,
		PromptTokens: uint32(inv.promptTokens),
		Region:       inv.region,
	}
	return unary(req, adminClient.ExplainRoute, (*caller).explanation), nil
}

func (inv *invocation) members() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	return unary(&adminv1.ListMembersRequest{}, adminClient.ListMembers, (*caller).memberTable), nil
}

// watchClusters prints the cluster table at once and on every change until ctx ends or the
// stream fails.
func (c *caller) watchClusters(ctx context.Context, req *adminv1.WatchClustersRequest) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	stream, err := cl.WatchClusters(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	for stream.Receive() {
		if err := c.printWatch(stream.Msg()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
