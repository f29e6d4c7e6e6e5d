package adversarial

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
)

// kvWorld is a gateway scoring prefixes from the KV events of three modelsim pods.
type kvWorld struct {
	w        *harness.World
	gw       *harness.Node
	pods     []*harness.Node
	endpoint string // the gateway's SUB socket, host:port
}

// kvEventsConfig is a profile where the precise prefix match decides and queue length breaks ties;
// the /tokenize timeout is generous, since a loaded machine can take longer than the default.
const kvEventsConfig = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: precise-prefix-cache-scorer
  parameters:
    hashSeed: "7"
    tokenizeTimeout: 10s
- type: queue-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: precise-prefix-cache-scorer
    weight: 10
  - pluginRef: queue-scorer
    weight: 1
  - pluginRef: max-score-picker
`

func newKVWorld(t *testing.T) *kvWorld {
	t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	k := &kvWorld{w: newWorld(t), endpoint: port}
	var addrs []string
	for range 3 {
		p := k.w.Pod("h100", "--kv-events-endpoint=tcp://"+k.endpoint, "--hash-seed=7")
		k.pods = append(k.pods, p)
		addrs = append(addrs, p.Listen)
	}
	cfg := k.w.Write("precise.yaml", kvEventsConfig)
	k.gw = k.w.Gateway("adv-kv", "us-east-1", addrs, "--config="+cfg,
		"--kv-events-endpoint=tcp://"+k.endpoint, "--endpoint-header-address")
	// Every pod's publisher connects and is heard: a prompt sent straight to each pod (not
	// through the gateway) is reported stored.
	for i, p := range k.pods {
		n := 0
		poll.Until(t, 30*time.Second, func() bool {
			n++
			k.complete(t, "http://"+p.Listen, fmt.Sprintf("warm-up %d %d %s", i, n, strings.Repeat("w", 200)))
			return k.events(t, p.Listen) > 0
		}, "KV events of pod "+p.Listen+" to reach the gateway")
	}
	return k
}

// events is the kv_events counter of the pod at addr.
func (k *kvWorld) events(t *testing.T, addr string) float64 {
	t.Helper()
	return harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_kv_events_total", "endpoint="+addr,
		"kind=BlockStored")
}

// complete sends a completion to base (a pod or the gateway) and returns the response headers.
func (k *kvWorld) complete(t *testing.T, base, prompt string) http.Header {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"` + prompt + `","max_tokens":2}`
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion at %s: %d", base, resp.StatusCode)
	}
	return resp.Header
}

// checkRoutesToHolder caches a long prompt on one pod by sending it there directly (the gateway
// never routed it, so only the pod's events say where it is), then checks the gateway sends
// requests sharing that prefix to that pod, scored precisely.
func (k *kvWorld) checkRoutesToHolder(t *testing.T, holder *harness.Node, tag string) {
	t.Helper()
	prefix := strings.Repeat("shared system prompt "+tag+" with tools and examples. ", 60) // ~3 KB
	before := k.events(t, holder.Listen)
	k.complete(t, "http://"+holder.Listen, prefix+"first question")
	poll.Until(t, 10*time.Second, func() bool {
		return k.events(t, holder.Listen) >= before+40 // about 48 blocks of 16 tokens
	}, "the holder's BlockStored events")
	for i := range 4 {
		h := k.complete(t, "http://"+k.gw.Listen, fmt.Sprintf("%squestion %d", prefix, i))
		if got := h.Get(contract.HeaderEndpoint); got != holder.Listen {
			t.Errorf("request %d sharing the prefix went to %s, want %s (the pod holding it)", i, got, holder.Listen)
		}
		if got := h.Get(contract.HeaderPrefixScoring); got != string(contract.PrefixScoringPrecise) {
			t.Errorf("request %d: %s = %q, want precise", i, contract.HeaderPrefixScoring, got)
		}
	}
}

// TestKVEventsRoutePrecisely runs the real gateway over modelsim pods that publish vLLM KV cache
// events: every pod's events are counted per pod, a long prefix cached on a pod behind the
// gateway's back is found from the events alone, and a request whose prompt cannot be hashed as
// the engine does says it was scored by the approximate fallback.
func TestKVEventsRoutePrecisely(t *testing.T) {
	k := newKVWorld(t)
	for _, holder := range []*harness.Node{k.pods[2], k.pods[0]} {
		k.checkRoutesToHolder(t, holder, holder.Listen)
	}
	// A batch of prompts is not something /tokenize takes: the approximate scorer decides.
	body := `{"model":"` + harness.TestModel + `","prompt":["a"],"max_tokens":2}`
	resp, err := http.Post("http://"+k.gw.Listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.Header.Get(contract.HeaderPrefixScoring); got != "approximate; reason=unsupported_prompt" {
		t.Errorf("list prompt: %s = %q, want the approximate fallback", contract.HeaderPrefixScoring, got)
	}
	if got := harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_precise_prefix_decisions_total",
		"mode=precise"); got < 8 {
		t.Errorf("precise decisions = %v, want at least 8", got)
	}
}

// TestKVEventsHostilePublisher attacks the gateway's KV event socket: bytes that are not ZMTP, a
// frame header claiming a terabyte, a message of too many frames, a silent connection, a
// well-formed stream naming a pod the gateway does not have, and a flood of garbage batches
// under that topic. Each is refused and counted; the index does not grow, and requests still go
// to the pod holding their prefix, scored precisely.
func TestKVEventsHostilePublisher(t *testing.T) {
	k := newKVWorld(t)
	entries := func() float64 {
		return harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_kv_events_index_entries")
	}
	refused := func(reason string) float64 {
		return harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_kv_events_refused_total", "reason="+reason)
	}
	messages := func(result string) float64 {
		return harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_kv_events_messages_total", "result="+result)
	}
	// The warm-up's last events may still be on their way: start from a settled index.
	indexBefore := entries()
	poll.Until(t, 10*time.Second, func() bool {
		time.Sleep(300 * time.Millisecond)
		now := entries()
		settled := now == indexBefore
		indexBefore = now
		return settled
	}, "the index to settle")

	silent := k.dial(t) // says nothing: closed when the handshake times out
	defer silent.Close()

	garbage := k.dial(t)
	_, _ = garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("\x00", 64)))
	k.expectClosed(t, garbage)

	huge := k.pub(t)
	_, _ = huge.Write([]byte{flagLong, 0, 0, 0x01, 0, 0, 0, 0, 0}) // a 1 TiB frame
	k.expectClosed(t, huge)

	frames := k.pub(t)
	for range 9 {
		_, _ = frames.Write([]byte{flagMore, 1, 'x'})
	}
	k.expectClosed(t, frames)

	stranger := k.pub(t)
	defer stranger.Close()
	// A loopback address no pod has: the connection's own IP, so the guard's spoofing check
	// lets the messages through to the pool check.
	topic := kvevents.Topic("127.0.0.1:19999", harness.TestModel)
	batch := kvevents.AppendBatch(nil, 1.7e9, []engine.KVEvent{{Kind: engine.KVStored, Hash: 42,
		Tokens: make([]int64, 16)}}, 16, 0)
	const flood = 2000
	for i := range flood {
		payload := batch
		if i%2 == 1 {
			payload = []byte("\xdd\xff\xff\xff\xff not msgpack") // claims 4 billion events
		}
		sendMessage(t, stranger, topic, uint64(i), payload)
	}
	// A valid pod's topic with a garbage payload is refused as malformed, not applied.
	sendMessage(t, stranger, kvevents.Topic(k.pods[1].Listen, harness.TestModel), 0, []byte("\xc1\xc1"))

	poll.UntilState(t, 20*time.Second, func() (bool, string) {
		state := fmt.Sprintf("unknown_pod %v, malformed %v", messages("unknown_pod"), messages("malformed"))
		ok := messages("unknown_pod") >= flood && messages("malformed") >= 1
		for _, r := range []string{"bad_handshake", "frame_too_large", "too_many_frames", "handshake_timeout"} {
			state += fmt.Sprintf(", refused %s %v", r, refused(r))
			ok = ok && refused(r) >= 1
		}
		return ok, state
	}, "every refusal counted")
	if got := entries(); got > indexBefore {
		t.Errorf("index entries %v → %v: the hostile publisher grew the index", indexBefore, got)
	}
	if got := harness.MetricValue(t, k.gw.Metrics, "switchyard_gateway_kv_events_total",
		"endpoint=127.0.0.1:19999"); got != 0 {
		t.Errorf("an unknown pod got a kv_events series (%v)", got)
	}
	k.checkRoutesToHolder(t, k.pods[1], "after the attack")
}

// ZMTP frame flags.
const (
	flagMore = 0x01
	flagLong = 0x02
)

func (k *kvWorld) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", k.endpoint, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pub dials the gateway's SUB socket as a PUB socket (ZMTP 3.0 greeting and READY) and reads
// its greeting and READY.
func (k *kvWorld) pub(t *testing.T) net.Conn {
	t.Helper()
	c := k.dial(t)
	g := make([]byte, 64)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:], "NULL")
	ready := append([]byte{0x04, 0, 5}, "READY"...)
	ready = append(ready, byte(len("Socket-Type")))
	ready = append(ready, "Socket-Type"...)
	ready = binary.BigEndian.AppendUint32(ready, 3)
	ready = append(ready, "PUB"...)
	ready[1] = byte(len(ready) - 2)
	if _, err := c.Write(append(g, ready...)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var peer [64 + 2]byte
	if _, err := io.ReadFull(c, peer[:]); err != nil {
		t.Fatalf("gateway greeting: %v", err)
	}
	rest := make([]byte, peer[65])
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatalf("gateway READY: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// expectClosed waits for the gateway to close c (an end of stream, or a reset when it closed
// with our bytes unread).
func (k *kvWorld) expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("connection not closed by the gateway: %v", err)
	}
}

func sendMessage(t *testing.T, c net.Conn, topic string, seq uint64, payload []byte) {
	t.Helper()
	var b []byte
	b = append(b, flagMore, byte(len(topic)))
	b = append(b, topic...)
	b = append(b, flagMore, 8)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(append(b, flagLong), uint64(len(payload)))
	b = append(b, payload...)
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("send: %v", err)
	}
}
