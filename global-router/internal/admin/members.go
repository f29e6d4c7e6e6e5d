package admin

import (
	"context"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

// ListMembers returns the gossip membership as this router sees it, ordered by name, with the
// estimated round trip to each member whose network coordinate is known.
func (s *Server) ListMembers(
	context.Context,
	*connect.Request[adminv1.ListMembersRequest],
) (*connect.Response[adminv1.ListMembersResponse], error) {
	rtts := map[string]float64{}
	for _, sum := range s.deps.Gossip.Snapshot() {
		if sum.RTTKnown {
			rtts[sum.Node] = millis(sum.RTT)
		}
	}
	members := s.deps.Gossip.Members()
	out := make([]*adminv1.Member, 0, len(members))
	for _, m := range members {
		out = append(out, &adminv1.Member{
			Name:    m.Name,
			Role:    string(m.Meta.Role),
			Cluster: m.Meta.Cluster,
			Region:  m.Meta.Region,
			Address: m.Addr,
			Url:     m.Meta.URL,
			Version: m.Meta.Version,
			State:   stateOf(m.State),
			RttMs:   rtts[m.Name],
		})
	}
	return connect.NewResponse(&adminv1.ListMembersResponse{Members: out}), nil
}

func stateOf(s gossip.MemberState) adminv1.MemberState {
	switch s {
	case gossip.StateAlive:
		return adminv1.MemberState_MEMBER_STATE_ALIVE
	case gossip.StateSuspect:
		return adminv1.MemberState_MEMBER_STATE_SUSPECT
	case gossip.StateDead:
		return adminv1.MemberState_MEMBER_STATE_DEAD
	case gossip.StateLeft:
		return adminv1.MemberState_MEMBER_STATE_LEFT
	}
	return adminv1.MemberState_MEMBER_STATE_UNSPECIFIED
}
