package admin

import (
	"context"
	"math"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// bytesPerToken is the front door's prompt-length estimate: about 4 bytes of text a token.
const bytesPerToken = 4

// maxPromptTokens bounds prompt_tokens, so a dry run cannot ask for a huge padded prompt.
const maxPromptTokens = 1 << 20

// ExplainRoute runs the front door's routing decision for a described request without sending
// it, and reports every candidate with its estimate, eligibility and reason. A decision that
// finds no cluster is an answer (route empty, error set), not a failed call; so is a refusal for
// want of a policy in force (policies not loaded yet, or the model's stored value unreadable),
// which leaves policy unset and lists no candidate.
func (s *Server) ExplainRoute(
	_ context.Context,
	req *connect.Request[adminv1.ExplainRouteRequest],
) (*connect.Response[adminv1.ExplainRouteResponse], error) {
	msg := req.Msg
	if err := validateModel(msg.GetModel()); err != nil {
		return nil, err
	}
	if r := msg.GetRegion(); r != "" && r != s.cfg.Region {
		return nil, invalidField(
			"region",
			"this router decides for region %q, not %q; ask a router of %q",
			s.cfg.Region,
			r,
			r,
		)
	}
	if msg.GetPromptTokens() > maxPromptTokens {
		return nil, invalidField("prompt_tokens", "%d is over the limit of %d", msg.GetPromptTokens(), maxPromptTokens)
	}
	policy := s.policyInForce(msg.GetModel())
	view, d, err := s.deps.Explainer.Decide(msg.GetModel(), promptFor(msg))
	resp := &adminv1.ExplainRouteResponse{Route: string(d.Route), Policy: policy}
	if err != nil {
		resp.Route, resp.Error = "", err.Error()
	}
	for i, t := range d.Targets {
		name := view[t].Cluster.Name
		if i == 0 {
			resp.ChosenCluster = name
		} else {
			resp.Fallbacks = append(resp.Fallbacks, name)
		}
	}
	for _, e := range d.Explain {
		resp.Candidates = append(resp.Candidates, candidateOf(e))
	}
	return connect.NewResponse(resp), nil
}

// promptFor returns the prompt to decide for: the given text, padded with spaces to
// prompt_tokens when that asks for a longer prompt (the padding matches no cached prefix).
func promptFor(msg *adminv1.ExplainRouteRequest) []byte {
	prompt := msg.GetPrompt()
	if want := int(msg.GetPromptTokens()) * bytesPerToken; want > len(prompt) {
		prompt += strings.Repeat(" ", want-len(prompt))
	}
	return []byte(prompt)
}

// policyInForce returns the policy a request for model is decided with: the stored one, or the
// one the front door uses without it (the defaults, or, while policies are not loaded and the
// router keeps requests in its region, the defaults restricted to it) with revision 0; nil when
// the model is refused for want of a policy.
func (s *Server) policyInForce(model string) *adminv1.Policy {
	pol, err := s.deps.Explainer.Policy(model)
	if err != nil {
		return nil
	}
	if p, ok := s.deps.Config.Snapshot().StoredPolicy(model); ok {
		if p.OverflowThreshold == nil {
			p.OverflowThreshold = proto.Float64(routing.DefaultPolicy().OverflowThreshold)
		}
		return p
	}
	return &adminv1.Policy{Model: model, OverflowThreshold: proto.Float64(pol.OverflowThreshold),
		AllowedRegions: slices.Clone(pol.AllowedRegions), OverflowCap: int32(min(pol.OverflowCap, math.MaxInt32)),
		TtftSloMs: uint32(min(pol.TTFTSLO.Milliseconds(), math.MaxUint32))}
}

func candidateOf(e routing.Explanation) *adminv1.Candidate {
	return &adminv1.Candidate{
		Cluster:     e.Cluster,
		Region:      e.Region,
		Eligible:    e.Eligible,
		Chosen:      e.Chosen,
		EstimateMs:  millis(e.Estimate),
		Utilization: e.Utilization,
		Reason:      e.Reason.Text(),
		ReasonCode:  e.Reason.String(),
	}
}
