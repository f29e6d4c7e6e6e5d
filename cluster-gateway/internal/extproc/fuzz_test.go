package extproc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// fuzzMaxBody is newEnv's body limit.
const fuzzMaxBody = 4 << 20

// FuzzRequestBody sends arbitrary request bodies, split in two chunks at an arbitrary point and
// announced with an arbitrary content-length, through a real ext_proc stream. Every stream ends in
// exactly one of two ways: the immediate 413, 400 or 404 that the limit and body-based routing's
// parser call for, or a routing decision to an endpoint for a body that encoding/json also reads
// as naming the served model, followed by that body unchanged.
func FuzzRequestBody(f *testing.F) {
	f.Add([]byte(`{"model":"llama","prompt":"hello","stream":true}`), uint16(7), "")
	f.Add([]byte(`{"model":"llama","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`), uint16(0), "81")
	f.Add([]byte(`{"model":"gpt-x"}`), uint16(3), "17")
	f.Add([]byte(`{"model"`), uint16(100), "")
	f.Add([]byte(`{"model":"llama"}`), uint16(1), "99999999")
	f.Add([]byte(``), uint16(0), "-1")
	f.Add([]byte(`{"model":"llama","model":"x"}`), uint16(5), "x")
	f.Add([]byte(`{"MODEL":"llama"}`), uint16(2), " 17")
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte, split uint16, contentLength string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := e.client.Process(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cut := min(int(split), len(body))
		kv := []string{":method", "POST", ":path", "/v1/completions", "content-type", "application/json"}
		if contentLength != "" {
			kv = append(kv, "content-length", contentLength)
		}
		msgs := []*extprocv3.ProcessingRequest{headersMsg(false, nil, kv...), bodyMsg(body[:cut], false)}
		for rest := body[cut:]; ; { // as Envoy streams it: chunks within extproc.MaxMessageBytes
			n := min(len(rest), 64<<10)
			msgs = append(msgs, bodyMsg(rest[:n], n == len(rest)))
			if rest = rest[n:]; len(rest) == 0 {
				break
			}
		}
		for _, m := range msgs {
			if err := s.Send(m); errors.Is(err, io.EOF) {
				break // answered early (immediate response)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		_ = s.CloseSend()
		first, err := s.Recv()
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		want := wantStatus(body, contentLength)
		if ir := first.GetImmediateResponse(); ir != nil || want != 0 {
			if got := int(ir.GetStatus().GetCode()); got != want {
				t.Fatalf("immediate status %d, want %d for %q announced as %q; answer %v", got, want, body, contentLength, first)
			}
		} else {
			checkRouted(t, s, first, body)
		}
		for { // the server ends the stream once it has seen ours end
			if _, err := s.Recv(); err != nil {
				break
			}
		}
	})
}

// declaredTooLarge reports whether the content-length header announces more than the limit.
func declaredTooLarge(contentLength string) bool {
	n, err := strconv.Atoi(contentLength)
	return err == nil && n > fuzzMaxBody
}

// modelOf returns the body's "model" member as encoding/json reads it (exact key, last wins).
func modelOf(body []byte) (model string, isString, valid bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return "", false, json.Valid(body)
	}
	isString = json.Unmarshal(obj["model"], &model) == nil && obj["model"] != nil
	return model, isString, true
}

// wantStatus is the immediate status the gateway must answer, 0 when it must route: 413 over
// the limit, 400 for what body-based routing cannot parse, 404 for a model no endpoint serves.
func wantStatus(body []byte, contentLength string) int {
	if len(body) > fuzzMaxBody || declaredTooLarge(contentLength) {
		return 413
	}
	var b openai.Body
	if err := openai.Parse(body, &b); err != nil {
		return 400
	}
	if b.Model != "llama" {
		return 404
	}
	return 0
}

// checkRouted checks a routing decision: encoding/json agrees that the body names the served
// model, the destination is an endpoint, and the body comes back unchanged.
func checkRouted(
	t *testing.T,
	s extprocv3.ExternalProcessor_ProcessClient,
	first *extprocv3.ProcessingResponse,
	body []byte,
) {
	t.Helper()
	if model, isString, valid := modelOf(body); !valid || !isString || model != "llama" {
		t.Fatalf("routed %q (valid JSON %v, model %q)", body, valid, model)
	}
	dest := headerValue(first.GetRequestHeaders().GetResponse().GetHeaderMutation(), contract.HeaderDestination)
	if !slices.Contains(addrs, dest) {
		t.Fatalf("destination %q is not an endpoint; first answer %v", dest, first)
	}
	var got []byte
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("body not sent back: %v", err)
		}
		sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if sr == nil {
			t.Fatalf("want a streamed body chunk, got %v", r)
		}
		got = append(got, sr.GetBody()...)
		if sr.GetEndOfStream() {
			break
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("body changed: sent %q, got back %q", body, got)
	}
}
