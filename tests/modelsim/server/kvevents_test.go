package server_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

func TestTokenize(t *testing.T) {
	url, _ := start(t, func(c *server.Config) { c.LoRAs = []string{"sql"} })
	chat := textgen.RenderChat([]textgen.Message{{Role: "user", Content: "hi there"}})
	tests := []struct {
		name, body string
		status     int
		want       []int64
	}{
		{"prompt", `{"model":"llama","prompt":"abcdefgh!"}`, 200, textgen.Tokenize("abcdefgh!")},
		{"adapter", `{"model":"sql","prompt":"abcd"}`, 200, textgen.Tokenize("abcd")},
		{"messages", `{"model":"llama","messages":[{"role":"user","content":"hi there"}],"add_generation_prompt":true}`,
			200, textgen.Tokenize(chat)},
		{"token ids", `{"prompt":[5,6,7]}`, 200, []int64{5, 6, 7}},
		{"unknown model", `{"model":"nope","prompt":"x"}`, 404, nil},
		{"no prompt", `{"model":"llama"}`, 400, nil},
		{"bad json", `{`, 400, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, url+"/tokenize", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if tc.status != 200 {
				return
			}
			var got struct {
				Count  int     `json:"count"`
				Tokens []int64 `json:"tokens"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Count != len(tc.want) || len(got.Tokens) != len(tc.want) || got.Tokens[0] != tc.want[0] ||
				got.Tokens[len(got.Tokens)-1] != tc.want[len(tc.want)-1] {
				t.Errorf("tokenize = %+v, want %v", got, tc.want)
			}
		})
	}
}

// TestKVEventsMatchTokenize serves a prompt and checks that the blocks the server reports
// stored are the chain of the ids its /tokenize gives, as a gateway would compute it.
func TestKVEventsMatchTokenize(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	sub := zmq4.NewSub(t.Context())
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	if err := sub.Listen("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	url, s := start(t, func(c *server.Config) { c.KVEventsEndpoint, c.HashSeed = "tcp://"+addr, "42" })
	prompt := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12) // 540 bytes: 8 blocks
	_, tb := post(t, url+"/tokenize", `{"model":"llama","prompt":"`+prompt+`"}`)
	var tok struct{ Tokens []int64 }
	if err := json.Unmarshal(tb, &tok); err != nil {
		t.Fatal(err)
	}
	want := kvevents.BlockHashes("42", tok.Tokens, 16, "")
	stored := map[uint64]bool{}
	msgs := make(chan zmq4.Msg, 16)
	go func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				return
			}
			msgs <- m
		}
	}()
	deadline := time.After(20 * time.Second)
	complete := func(p string) {
		t.Helper()
		if resp, b := post(
			t,
			url+"/v1/completions",
			`{"model":"llama","prompt":"`+p+`","max_tokens":2}`,
		); resp.StatusCode != 200 {
			t.Fatalf("completion: %d %s", resp.StatusCode, b)
		}
	}
	// The publisher connects once the server is up; what is stored before that is not heard,
	// so warm up with prompts of their own until a message arrives.
	for warm, heard := 0, false; !heard; warm++ {
		complete(strings.Repeat("warm-up prompt number "+string(rune('a'+warm%26)), 4) + prompt[:warm%64])
		select {
		case m := <-msgs:
			heard = true
			if got := string(m.Frames[0]); got != "kv@"+s.Addr().String()+"@llama" {
				t.Fatalf("topic %q", got)
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("no KV event message")
		}
	}
	complete(prompt)
	for !stored[want[len(want)-1]] {
		select {
		case m := <-msgs:
			var batch []any
			if err := msgpack.Unmarshal(m.Frames[2], &batch); err != nil {
				t.Fatal(err)
			}
			for _, ev := range batch[1].([]any) {
				if e := ev.([]any); e[0] == kvevents.TagStored {
					stored[toUint(e[1].([]any)[0])] = true
				}
			}
		case <-deadline:
			t.Fatalf("stored %d blocks, not the prompt's %d", len(stored), len(want))
		}
	}
	for i, h := range want {
		if !stored[h] {
			t.Errorf("block %d (%x) not reported stored", i, h)
		}
	}
}

func toUint(v any) uint64 {
	switch x := v.(type) {
	case uint64:
		return x
	case uint32:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint8:
		return uint64(x)
	case int8:
		return uint64(x)
	}
	return 0
}
