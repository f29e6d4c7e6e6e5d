package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// startReplicas runs two gateways of cluster c1 in front of the same pods, sharing state over a
// replica pool on loopback (b joins a).
func startReplicas(t *testing.T, pods []*fakeVLLM) (a, b *gateway) {
	t.Helper()
	flags := []string{"--replica-bind=127.0.0.1:0", "--replica-interval=20ms", "--endpoint-header-address"}
	a = startGatewayOn(t, pods, nil, flags...)
	b = startGatewayOn(t, pods, nil, append(flags, "--replica-join="+a.ReplicaAddr())...)
	poll.Until(t, waitTimeout, func() bool {
		return metricValue(t, a, "switchyard_gateway_replica_peers") == "1" &&
			metricValue(t, b, "switchyard_gateway_replica_peers") == "1"
	}, "the replicas see each other")
	return a, b
}

// complete sends a completion of prompt to g and returns the pod that served it.
func complete(t *testing.T, g *gateway, prompt string) string {
	t.Helper()
	resp, body := post(t, g.http+"/v1/completions", fmt.Sprintf(`{"model":"llama","prompt":%q}`, prompt))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return resp.Header.Get("x-switchyard-endpoint")
}

// A prefix one replica routed to a pod is found on that pod by the other: each prompt goes
// first to a, then to b, which must choose a's pod (by chance, with four equal pods, all five
// would match once in 4^5).
func TestReplicasSharePrefixRoutes(t *testing.T) {
	pods := []*fakeVLLM{newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t)}
	a, b := startReplicas(t, pods)
	const received = `switchyard_gateway_replica_messages_received_total{kind="prefix"}`
	for i := range 5 {
		prompt := fmt.Sprintf("conversation %d. %s", i, strings.Repeat("a long shared system prompt. ", 100))
		before := metricValue(t, b, received)
		pod := complete(t, a, prompt)
		poll.Until(t, waitTimeout, func() bool { return metricValue(t, b, received) != before },
			"b receives a's prefix route")
		if got := complete(t, b, prompt); got != pod {
			t.Fatalf("prompt %d: a routed it to %s, b to %s", i, pod, got)
		}
	}
}

// The requests one replica has in flight count at the other within a bounded time (the
// scorers' use of them is tested in predictedttft), and stop counting when they end.
func TestReplicasShareInFlight(t *testing.T) {
	pods := []*fakeVLLM{newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t), newFakeVLLM(t)}
	release := make(chan struct{})
	for _, p := range pods {
		p.hold.Store(&release)
	}
	a, b := startReplicas(t, pods)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	for i := range 3 {
		wg.Go(func() { complete(t, a, fmt.Sprintf("%s %d", holdMarker, i)) })
	}
	const peers = "switchyard_gateway_replica_peer_inflight_requests"
	poll.Until(t, waitTimeout, func() bool { return metricValue(t, b, peers) == "3" },
		"b counts a's 3 requests in flight")
	close(release)
	released = true
	wg.Wait()
	poll.Until(t, waitTimeout, func() bool { return metricValue(t, b, peers) == "0" },
		"a's finished requests leave b's count")
}
