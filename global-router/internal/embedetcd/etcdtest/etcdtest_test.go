package etcdtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

// TestClusterSurvivesLeaderLoss stops the leader of a three-member cluster: writes keep working on
// the remaining quorum, and the old leader catches up after a restart.
func TestClusterSurvivesLeaderLoss(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	leader := -1
	for i, ep := range c.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			t.Fatalf("status %s: %v", ep, err)
		}
		if st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader among the members")
	}
	c.Stop(leader)
	if _, err := cli.Put(ctx, "after-leader-loss", "ok"); err != nil {
		t.Fatalf("put without the old leader: %v", err)
	}
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatalf("restart member %d: %v", leader, err)
	}
	resp, err := cli.Get(ctx, "after-leader-loss")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "ok" {
		t.Fatalf("get after restart = %v, %v", resp, err)
	}
	if err := c.Restart(ctx, leader); err == nil {
		t.Fatal("restart of a running member succeeded")
	}
}
