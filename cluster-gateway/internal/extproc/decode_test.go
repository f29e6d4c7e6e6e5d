package extproc

import (
	"bytes"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// wireCases are encoded ProcessingRequests: body chunks in every shape the fast path takes, and
// messages it must leave to protobuf-go.
func wireCases(t testing.TB) map[string][]byte {
	t.Helper()
	enc := func(m *extprocv3.ProcessingRequest) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	body := func(data string, eos bool) *extprocv3.ProcessingRequest {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: []byte(data), EndOfStream: eos}}}
	}
	meta, _ := structpb.NewStruct(map[string]any{"x-gateway-destination-endpoint-subset": []any{"10.0.0.1:8000"}})
	withMeta := body("chunk", false)
	withMeta.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb.subset_hint": meta}}
	withMeta.ObservabilityMode = true
	withMeta.Attributes = map[string]*structpb.Struct{"a": meta}
	response := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte("data: {}\n\n"), EndOfStream: true}}}
	headers := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte("/v1/completions")}}},
		},
	}}

	bodyTag := protowire.AppendTag(nil, fieldRequestBody, protowire.BytesType)
	inner := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(bytes.Clone(bodyTag), bytes.Join(fields, nil))
	}
	data := func(s string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, fieldBodyBytes, protowire.BytesType), []byte(s))
	}
	eos := func(v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, fieldBodyEndOfStream, protowire.VarintType), v)
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	return map[string][]byte{
		"body chunk":         enc(body("hello", false)),
		"last body chunk":    enc(body(string(bytes.Repeat([]byte("x"), 70000)), true)),
		"empty last chunk":   enc(body("", true)),
		"body with metadata": enc(withMeta),
		"response body":      enc(response),
		"headers":            enc(headers),
		"trailers": enc(
			&extprocv3.ProcessingRequest{
				Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}},
			},
		),
		"empty message":               {},
		"fields in reverse order":     inner(eos(1), data("abc")),
		"end_of_stream twice":         inner(eos(1), data("abc"), eos(0)),
		"end_of_stream as big varint": inner(data("abc"), eos(1<<40)),
		"body field twice":            inner(data("abc"), data("de")),
		"unknown field in body":       inner(data("abc"), unknown),
		"unknown field outside body":  append(enc(body("abc", true)), unknown...),
		"body chunk twice":            append(enc(body("abc", false)), enc(body("de", true))...),
		"headers then body":           append(enc(headers), enc(body("abc", true))...),
		"body then headers":           append(enc(body("abc", true)), enc(headers)...),
		"body field of the wrong type": protowire.AppendVarint(
			protowire.AppendTag(nil, fieldRequestBody, protowire.VarintType),
			1,
		),
		"truncated":             enc(body("hello", true))[:5],
		"truncated inside body": inner(data("abc"))[:6],
	}
}

// TestDecodeRequestMatchesProto checks that decodeRequest decodes every message as proto.Unmarshal
// does, and that the body of a chunk aliases the input instead of being copied.
func TestDecodeRequestMatchesProto(t *testing.T) {
	aliasing := map[string]bool{
		"body chunk": true, "last body chunk": true, "body with metadata": true, "response body": true,
		"fields in reverse order": true, "end_of_stream twice": true, "end_of_stream as big varint": true,
		"unknown field outside body": true,
	}
	for name, b := range wireCases(t) {
		t.Run(name, func(t *testing.T) {
			got, aliased, err := decodeRequest(b)
			checkSameDecode(t, b, got, err)
			if aliased != aliasing[name] {
				t.Fatalf("aliased = %v, want %v", aliased, aliasing[name])
			}
			if aliased {
				body := got.GetRequestBody().GetBody()
				if body == nil {
					body = got.GetResponseBody().GetBody()
				}
				if !within(body, b) {
					t.Fatal("body was copied, not aliased")
				}
				if cap(body) != len(body) {
					t.Fatalf("aliased body has room past its end: len %d cap %d", len(body), cap(body))
				}
			}
		})
	}
}

// FuzzDecodeRequest checks decodeRequest against proto.Unmarshal on arbitrary input.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range wireCases(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := decodeRequest(b)
		checkSameDecode(t, b, got, err)
	})
}

// checkSameDecode fails unless (got, err) is what proto.Unmarshal makes of b.
func checkSameDecode(t *testing.T, b []byte, got *extprocv3.ProcessingRequest, err error) {
	t.Helper()
	want := &extprocv3.ProcessingRequest{}
	wantErr := proto.Unmarshal(b, want)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("err = %v, proto.Unmarshal's = %v", err, wantErr)
	}
	if err == nil && !proto.Equal(got, want) {
		t.Fatalf("decoded %v, proto.Unmarshal decodes %v", got, want)
	}
}

// within reports whether s lies inside b's memory: flipping b's bytes changes s. It modifies b.
func within(s, b []byte) bool {
	before := bytes.Clone(s)
	for i := range b {
		b[i] ^= 0xFF
	}
	return len(s) > 0 && !bytes.Equal(s, before)
}
