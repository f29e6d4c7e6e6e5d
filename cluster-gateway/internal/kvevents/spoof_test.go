package kvevents

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSubscriberRefusesSpoofedPods: a publisher on 127.0.0.1 that names another pod of the pool
// (10.0.0.7) in its topic, to store blocks in that pod's name, or a host name the guard cannot
// check, has its connection closed before the message is applied, counted as spoofed_pod; a
// publisher naming its own address is applied, and with TrustTopicPod the same topic is too.
func TestSubscriberRefusesSpoofedPods(t *testing.T) {
	const victim = "10.0.0.7:8000"
	for _, topic := range []string{"kv@" + victim + "@llama", "kv@10.0.0.7@llama", "kv@model-0.svc:8000@llama"} {
		t.Run(topic, func(t *testing.T) {
			s := startSubscriberOn(t, nil, podA, victim, "model-0.svc:8000")
			spoofed := s.m.refused.WithLabelValues(refusedSpoofed)
			pub := newPublisher(t, s.sub.Addr())
			pub.sendUntil(t, topic, encodeBatch(t, nil, stored(1, 2, 3)),
				func() bool { return testutil.ToFloat64(spoofed) > 0 }, "spoofed topic refused")
			// The genuine pod is still served, on a new connection.
			own := newPublisher(t, s.sub.Addr())
			own.sendUntil(t, "kv@"+podA+"@llama", encodeBatch(t, nil, stored(4)),
				func() bool { return s.idx.PodEntries(podA) == 1 }, "the publisher's own pod indexed")
			if n := s.idx.PodEntries(victim) + s.idx.PodEntries("model-0.svc:8000"); n != 0 {
				t.Fatalf("the other pods hold %d entries from a spoofed topic", n)
			}
		})
	}
	t.Run("trusted", func(t *testing.T) {
		s := startSubscriberOn(t, func(c *Config) { c.TrustTopicPod = true }, podA, victim)
		pub := newPublisher(t, s.sub.Addr())
		pub.sendUntil(t, "kv@"+victim+"@llama", encodeBatch(t, nil, stored(1, 2, 3)),
			func() bool { return s.idx.PodEntries(victim) == 3 }, "trusted topic applied")
		if got := testutil.ToFloat64(s.m.refused.WithLabelValues(refusedSpoofed)); got != 0 {
			t.Fatalf("spoofed_pod = %v with TrustTopicPod", got)
		}
	})
}
