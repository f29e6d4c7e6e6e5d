package kvevents_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
)

// TestBlockHashesCanonicalCBOR checks the chain against an independent canonical CBOR encoder
// (vLLM's cbor2.dumps(..., canonical=True)).
func TestBlockHashesCanonicalCBOR(t *testing.T) {
	enc, err := cbor.CanonicalEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int64, 50)
	for i := range tokens {
		tokens[i] = int64(i*2654435761) % 4_000_000_000
	}
	for _, tc := range []struct{ seed, adapter string }{{"", ""}, {"42", ""}, {"7", "sql-lora"}} {
		root, _ := enc.Marshal(tc.seed)
		parent := sha256.Sum256(root)
		var want []uint64
		for lo := 0; lo+16 <= len(tokens); lo += 16 {
			var extra any
			if tc.adapter != "" {
				extra = []any{tc.adapter}
			}
			b, err := enc.Marshal([]any{parent[:], tokens[lo : lo+16], extra})
			if err != nil {
				t.Fatal(err)
			}
			parent = sha256.Sum256(b)
			want = append(want, binary.BigEndian.Uint64(parent[24:]))
		}
		got := kvevents.BlockHashes(tc.seed, tokens, 16, tc.adapter)
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("seed %q adapter %q: %x, want %x", tc.seed, tc.adapter, got, want)
		}
	}
}

// TestAppendBatchIsVLLMShape decodes the batch with a general msgpack decoder and checks
// vLLM's array-like layout.
func TestAppendBatchIsVLLMShape(t *testing.T) {
	toks := []int64{1, 2, 300, 70000, 5_000_000_000}
	events := []engine.KVEvent{
		{Kind: engine.KVStored, Hash: 1<<63 + 5, Tokens: toks, Adapter: "sql"},
		{Kind: engine.KVStored, Hash: 9, Parent: 1<<63 + 5, HasParent: true, Tokens: toks},
		{Kind: engine.KVRemoved, Hash: 1<<63 + 5},
		{Kind: engine.KVCleared},
	}
	var batch []any
	if err := msgpack.Unmarshal(kvevents.AppendBatch(nil, 1.5e9, events, 16, 0), &batch); err != nil {
		t.Fatal(err)
	}
	if len(batch) != 3 || batch[0] != 1.5e9 {
		t.Fatalf("batch %v", batch)
	}
	evs := batch[1].([]any)
	first := evs[0].([]any)
	if len(first) != 8 || first[0] != kvevents.TagStored || first[2] != nil || first[4] != int8(16) ||
		first[6] != "GPU" || first[7] != "sql" {
		t.Errorf("BlockStored %#v", first)
	}
	if h := first[1].([]any)[0]; h != uint64(1<<63+5) {
		t.Errorf("block hash %#v", h)
	}
	if ids := first[3].([]any); len(ids) != len(toks) || ids[4] != uint64(5_000_000_000) {
		t.Errorf("token ids %#v", ids)
	}
	if second := evs[1].([]any); second[2] != uint64(1<<63+5) || second[7] != nil {
		t.Errorf("second BlockStored %#v", second)
	}
	if rem := evs[2].([]any); len(rem) != 3 || rem[0] != kvevents.TagRemoved {
		t.Errorf("BlockRemoved %#v", rem)
	}
	if clr := evs[3].([]any); len(clr) != 1 || clr[0] != kvevents.TagCleared {
		t.Errorf("AllBlocksCleared %#v", clr)
	}
}

// fakeSource hands out the events pushed to it.
type fakeSource struct{ ch chan engine.KVEvent }

func (f *fakeSource) TakeKVEvents(dst []engine.KVEvent) []engine.KVEvent {
	for {
		select {
		case ev := <-f.ch:
			dst = append(dst, ev)
		default:
			return dst
		}
	}
}

// TestPublisherReachesZMQSub publishes to a SUB socket of the ZeroMQ library the gateway uses,
// and reconnects after the subscriber restarts, spending the sequence numbers of what it could
// not send.
func TestPublisherReachesZMQSub(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	sub := listenSub(t, addr)
	src := &fakeSource{ch: make(chan engine.KVEvent, 64)}
	cfg := kvevents.DefaultConfig()
	cfg.Endpoint, cfg.Topic, cfg.Redial = "tcp://"+addr, kvevents.Topic("10.0.0.7:8000", "llama"), 20*time.Millisecond
	pub, err := kvevents.New(cfg, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = pub.Run(ctx) }()
	defer func() { cancel(); <-done }()

	first := recvWhileFeeding(t, sub, src)
	if string(first.Frames[0]) != "kv@10.0.0.7:8000@llama" || len(first.Frames) != 3 || len(first.Frames[1]) != 8 {
		t.Fatalf("message %q", first.Frames)
	}
	_ = sub.Close()
	sub = listenSub(t, addr)
	defer sub.Close()
	again := recvWhileFeeding(t, sub, src)
	if s0, s1 := binary.BigEndian.Uint64(first.Frames[1]), binary.BigEndian.Uint64(again.Frames[1]); s1 <= s0 {
		t.Errorf("sequence %d after %d", s1, s0)
	}
	if st := pub.Stats(); st.Connects < 2 || st.Messages < 2 {
		t.Errorf("stats %+v", st)
	}
}

func listenSub(t *testing.T, addr string) zmq4.Socket {
	t.Helper()
	sub := zmq4.NewSub(t.Context())
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := sub.Listen("tcp://" + addr)
		if err == nil {
			return sub
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recvWhileFeeding keeps events flowing until the subscriber receives a message.
func recvWhileFeeding(t *testing.T, sub zmq4.Socket, src *fakeSource) zmq4.Msg {
	t.Helper()
	got := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := sub.Recv(); err == nil {
			got <- m
		}
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m := <-got:
			if !bytes.HasPrefix(m.Frames[0], []byte("kv@")) {
				t.Fatalf("topic %q", m.Frames[0])
			}
			return m
		case <-tick.C:
			select {
			case src.ch <- engine.KVEvent{Kind: engine.KVStored, Hash: 1, Tokens: make([]int64, 16)}:
			default:
			}
		case <-timeout:
			t.Fatal("no message reached the subscriber")
		}
	}
}
