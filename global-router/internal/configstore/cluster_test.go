package configstore_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// TestWatchSurvivesEtcdLeaderLoss: in a three-member cluster, stopping the raft leader neither
// loses the view nor stops later changes from arriving.
func TestWatchSurvivesEtcdLeaderLoss(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a three-member etcd cluster")
	}
	ctx := testCtx(t)
	c := startCluster(t)
	cli := c.Client(t)
	s := newStore(t, cli)
	runStore(t, s)
	if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 1}, 0); err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { return policyOf(s.Snapshot(), "m").OverflowCap == 1 },
		"policy before leader loss",
	)

	leader := -1
	for i, ep := range c.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no etcd leader")
	}
	c.Stop(leader)
	if policyOf(s.Snapshot(), "m").OverflowCap != 1 {
		t.Fatal("view lost the policy when the etcd leader stopped")
	}
	p, err := s.GetPolicy(ctx, "m")
	if err != nil {
		t.Fatalf("get without the old leader: %v", err)
	}
	if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 2}, p.GetRevision()); err != nil {
		t.Fatalf("put without the old leader: %v", err)
	}
	if err := s.SetClusterDrain(ctx, "c1", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, func() bool {
		v := s.Snapshot()
		return policyOf(v, "m").OverflowCap == 2 && v.ClusterDrained("c1")
	}, "changes after leader loss")
}
