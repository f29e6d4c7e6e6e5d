package e2e

import (
	"testing"
	"time"
)

// TestPodKilledMidLoad kills one of three pods behind a gateway while steady load runs: requests
// that had not received a byte are retried on another pod (none lost), streams already running on
// the killed pod end with an error event, and the pod gets no new requests once it is gone.
func TestPodKilledMidLoad(t *testing.T) {
	w := newWorld(t)
	w.TimeScale = 1 // real-time streams, so that some are running on the pod when it dies
	pods := []*node{w.Pod("h100"), w.Pod("h100"), w.Pod("h100")}
	// Named, so that x-switchyard-endpoint tells which pod served each request.
	names := []string{"east-a-0", "east-a-1", "east-a-2"}
	gw := w.Gateway("east-a", "us-east-1", []string{names[0] + "=" + pods[0].Listen, names[1] + "=" + pods[1].Listen,
		names[2] + "=" + pods[2].Listen})

	const killAt = 4 * time.Second
	l := startLoad(t, "http://"+gw.Listen, 15, 12*time.Second, 150)
	time.Sleep(time.Until(l.started.Add(killAt)))
	victim, victimName := pods[1], names[1]
	victim.Kill()
	killedAt := time.Since(l.started)
	t.Logf("pod %s killed at %s", victim.Listen, killedAt.Round(time.Millisecond))

	samples := l.wait(t)
	o := count(samples)
	t.Logf("outcomes: %s", o)
	if o.Lost != 0 {
		t.Errorf("%d requests lost (failed before their first token); want 0\n%s", o.Lost, gw.Log())
	}
	if o.CutSilently != 0 {
		t.Errorf("%d streams cut without an error event", o.CutSilently)
	}
	if o.OK < o.Total*8/10 {
		t.Errorf("only %d of %d requests succeeded", o.OK, o.Total)
	}
	last := lastSentTo(samples, victimName)
	t.Logf(
		"FIGURES pod-kill: %d requests at 15/s, %d lost, %d streams cut with an error event, %d cut silently, last request to the dead pod sent %s after the kill",
		o.Total,
		o.Lost,
		o.Cut-o.CutSilently,
		o.CutSilently,
		max(0, last-killedAt).Round(time.Millisecond),
	)
	if last < 0 {
		t.Errorf("no answer names the victim %s in x-switchyard-endpoint, even before the kill", victimName)
	}
	// Allow one scrape interval and the retry of a request already connecting.
	if last > killedAt+500*time.Millisecond {
		t.Errorf("killed pod still served a request sent at %s (killed at %s)", last, killedAt)
	}
	after := servedAfter(samples, killedAt+time.Second, "endpoint")
	if after[names[0]]+after[names[2]] == 0 {
		t.Errorf("surviving pods served nothing after the kill: %v", after)
	}
	if o.Cut == 0 {
		t.Logf("no stream was running on the killed pod")
	}
}
