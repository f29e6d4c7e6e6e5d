package gossip_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

func memberState(n *gossip.Node, name string) gossip.MemberState {
	for _, m := range n.Members() {
		if m.Name == name {
			return m.State
		}
	}
	return gossip.StateUnknown
}

func formed(t *testing.T, p *gossiptest.Pool) {
	t.Helper()
	poll.Until(t, 30*time.Second, func() bool { return gossiptest.AllMembersAlive(nodes(p), p.Len()) },
		fmt.Sprintf("a pool of %d to form", p.Len()))
}

func TestSummaryTurnsStaleAfterTTL(t *testing.T) {
	p := gossiptest.Start(t, 2, func(_ int, c *gossip.Config) { c.SummaryTTL = 500 * time.Millisecond })
	formed(t, p)
	sub, cancel := p.Node(1).Subscribe()
	defer cancel()
	sent, err := p.Node(0).Publish(testSummary(2, 1, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		10*time.Second,
		func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
		"the summary to arrive",
	)
	select {
	case <-sub:
	case <-time.After(5 * time.Second):
		t.Fatal("no change notification")
	}
	poll.Until(t, 10*time.Second, func() bool {
		s := summaryOf(p.Node(1), sent.GetNode())
		return s.Stale && s.Age > 500*time.Millisecond && s.State == gossip.StateAlive
	}, "summary never marked stale")
	if _, err := p.Node(0).Publish(testSummary(2, 1, 0, 2)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() bool { return !summaryOf(p.Node(1), sent.GetNode()).Stale },
		"a fresh summary to clear the stale flag")
}

func TestKilledNodeMarkedDeadAndStale(t *testing.T) {
	p := gossiptest.Start(t, 3, func(i int, c *gossip.Config) {
		c.SummaryTTL = time.Minute // only the death may make the summary stale here
		c.SkipLeave = i == 2
	})
	formed(t, p)
	victim := p.Node(2).Name()
	sent, err := p.Node(2).Publish(testSummary(2, 1, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() bool { return hasSeq(p, victim, sent.GetSequence()) }, "the summary to arrive")
	if s := summaryOf(p.Node(0), victim); s.Stale {
		t.Fatal("summary stale before the kill")
	}
	p.Stop(2)
	poll.Until(t, 20*time.Second, func() bool {
		return memberState(p.Node(0), victim) == gossip.StateDead && memberState(p.Node(1), victim) == gossip.StateDead
	}, "killed node never declared dead")
	for i := 0; i < 2; i++ {
		s := summaryOf(p.Node(i), victim)
		if s == nil || !s.Stale || s.State != gossip.StateDead {
			t.Errorf("node %d: killed node's summary %+v, want stale and dead", i, s)
		}
	}
}

func TestRestartedNodeSequenceWins(t *testing.T) {
	p := gossiptest.Start(t, 3, func(_ int, c *gossip.Config) { c.SummaryTTL = time.Minute })
	formed(t, p)
	first, err := p.Node(2).Publish(testSummary(1, 1, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		10*time.Second,
		func() bool { return hasSeq(p, first.GetNode(), first.GetSequence()) },
		"the first summary to arrive",
	)
	p.Stop(2)
	poll.Until(t, 20*time.Second, func() bool { return memberState(p.Node(0), first.GetNode()) == gossip.StateLeft },
		"the stopped node seen as left")
	if s := summaryOf(p.Node(0), first.GetNode()); !s.Stale {
		t.Error("departed node's summary not stale")
	}
	c := gossiptest.Config(2)
	c.SummaryTTL = time.Minute
	c.Seeds = []string{p.Seed()}
	again := p.Add(c)
	second, err := again.Publish(testSummary(1, 1, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if second.GetSequence() <= first.GetSequence() {
		t.Fatalf("restarted sequence %d not above %d", second.GetSequence(), first.GetSequence())
	}
	poll.Until(t, 20*time.Second, func() bool {
		s := summaryOf(p.Node(0), second.GetNode())
		return s != nil && s.Summary.GetSequence() == second.GetSequence() && !s.Stale && s.State == gossip.StateAlive
	}, "restarted node's summary did not replace the old one")
}

func TestWrongKeyCannotJoinOrRead(t *testing.T) {
	p := gossiptest.Start(t, 2, nil)
	formed(t, p)
	sent, err := p.Node(0).Publish(testSummary(2, 2, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		10*time.Second,
		func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
		"the summary to arrive",
	)

	tests := []struct {
		name string
		keys [][]byte
	}{
		{"wrong key", [][]byte{bytes.Repeat([]byte{7}, 32)}},
		{"no key", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gossiptest.Config(10 + i)
			c.Seeds = []string{p.Seed()}
			c.Keys, c.Insecure = tt.keys, tt.keys == nil
			intruder := p.Add(c)
			time.Sleep(1500 * time.Millisecond) // many join attempts and gossip rounds
			if got := len(intruder.Members()); got != 1 {
				t.Errorf("intruder sees %d members, want only itself", got)
			}
			if snap := intruder.Snapshot(); len(snap) != 0 {
				t.Errorf("intruder read %d summaries", len(snap))
			}
			if st := memberState(p.Node(0), c.NodeName); st != gossip.StateUnknown {
				t.Errorf("pool lists the intruder as %v", st)
			}
		})
	}
}

func TestKeyRotationWithoutDowntime(t *testing.T) {
	oldKey, newKey := gossiptest.TestKey, bytes.Repeat([]byte{0x42}, 32)
	p := gossiptest.Start(t, 3, func(_ int, c *gossip.Config) { c.SummaryTTL = time.Minute })
	formed(t, p)
	steps := []struct {
		name string
		keys [][]byte
	}{
		{"install new key", [][]byte{oldKey, newKey}},
		{"send with new key", [][]byte{newKey, oldKey}},
		{"retire old key", [][]byte{newKey}},
	}
	for k, step := range steps {
		for i := 0; i < p.Len(); i++ {
			if err := p.Node(i).SetKeys(step.keys); err != nil {
				t.Fatalf("%s: node %d: %v", step.name, i, err)
			}
		}
		sent, err := p.Node(k).Publish(testSummary(1, 1, 0, uint32(k)))
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
			step.name+": the summary to spread")
		if !gossiptest.AllMembersAlive(nodes(p), 3) {
			t.Fatalf("%s: a member is no longer alive", step.name)
		}
	}
	if keys := p.Node(0).Keys(); len(keys) != 1 || !bytes.Equal(keys[0], newKey) {
		t.Fatalf("keys after rotation: %d keys", len(keys))
	}
	c := gossiptest.Config(9)
	c.Seeds = []string{p.Seed()}
	stale := p.Add(c) // still holds only the retired key
	time.Sleep(time.Second)
	if got := len(stale.Members()); got != 1 {
		t.Errorf("node with the retired key sees %d members", got)
	}
}
