package gossip_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
)

// Config.Transport supplies the memberlist transport: the nodes gossip over it (here
// memberlist's own, bound by the factory) and count what it moves; a factory that fails stops
// the node with its error.
func TestTransportOption(t *testing.T) {
	var made atomic.Int32
	factory := func() (memberlist.NodeAwareTransport, error) {
		made.Add(1)
		return memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}})
	}
	start := func(name string, seeds ...string) *gossip.Node {
		t.Helper()
		cfg := gossip.DefaultLANConfig()
		cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL =
			name, gossip.RoleGateway, "c-"+name, "r1", "http://"+name+":8080"
		cfg.BindAddr, cfg.BindPort, cfg.Insecure, cfg.Seeds, cfg.Transport = "127.0.0.1", 0, true, seeds, factory
		n, err := gossip.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node %s: %v", name, err)
			}
		})
		select {
		case <-n.Ready():
		case err := <-done:
			t.Fatalf("node %s stopped: %v", name, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("node %s did not start", name)
		}
		return n
	}
	a := start("a")
	b := start("b", a.Addr())
	if _, err := a.Publish(testSummary(1, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, func() bool { return summaryOf(b, "a") != nil }, "b never received a's summary")
	if made.Load() != 2 {
		t.Errorf("the factory made %d transports, want 2", made.Load())
	}
	if s := b.Stats(); s.PacketBytesReceived+s.StreamBytesReceived == 0 {
		t.Error("the supplied transport's bytes are not counted")
	}

	cfg := gossip.DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Region, cfg.BindAddr, cfg.Insecure = "c", gossip.RoleRouter, "r1", "127.0.0.1", true
	refused := errors.New("no network")
	cfg.Transport = func() (memberlist.NodeAwareTransport, error) { return nil, refused }
	n, err := gossip.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Run(ctx); !errors.Is(err, refused) {
		t.Errorf("Run with a failing transport factory: %v, want %v", err, refused)
	}
}
