package extproc

import (
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
)

// wantDecision builds the decision answer as a fresh tree of messages.
func wantDecision(
	targets []string,
	model, base, prefill string,
	bodyLen int,
	remove []string,
) *extprocv3.ProcessingResponse {
	set := func(k, v string) *corev3.HeaderValueOption {
		return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
	}
	hs := []*corev3.HeaderValueOption{
		set(contract.HeaderDestination, targets[0]),
		set("x-gateway-model-name", model),
		set("x-gateway-base-model-name", base),
	}
	if prefill != "" {
		hs = append(hs, set(contract.HeaderPrefillerHostPort, prefill))
	}
	if bodyLen > 0 {
		hs = append(hs, set("content-length", fmt.Sprint(bodyLen)))
	}
	joined := ""
	for i, t := range targets {
		if i > 0 {
			joined += ","
		}
		joined += t
	}
	inner := &structpb.Struct{
		Fields: map[string]*structpb.Value{contract.HeaderDestination: structpb.NewStringValue(joined)},
	}
	return &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{ClearRouteCache: true,
				HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: hs, RemoveHeaders: remove}},
		}},
		DynamicMetadata: &structpb.Struct{
			Fields: map[string]*structpb.Value{MetadataNamespace: structpb.NewStructValue(inner)},
		},
	}
}

// TestDecisionAnswerReuse fills one pooled answer after another (each case reuses the answer
// the previous one filled) and compares each, marshalled and decoded, with the same answer
// built from fresh messages.
func TestDecisionAnswerReuse(t *testing.T) {
	tests := []struct {
		name        string
		targets     []string
		model, base string
		prefill     string
		bodyLen     int
		remove      []string
	}{
		{
			"three targets and removals",
			[]string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000"},
			"sql-lora",
			"llama",
			"",
			102400,
			[]string{"x-gateway-x", "x-switchyard-tenant"},
		},
		{"no body, one target", []string{"10.0.0.9:8000"}, "llama", "llama", "", 0, nil},
		{"prefill pod", []string{"10.0.0.9:8000", "10.0.0.8:8000"}, "llama", "llama", "10.0.0.5:8000", 4096, nil},
		{
			"long names",
			[]string{"[fd00::1234:5678:9abc]:8000", "10.0.0.2:8000"},
			"a-rather-long-adapter-name-for-a-model",
			"meta-llama/Llama-3.1-8B-Instruct",
			"[fd00::1:2:3:4]:8000",
			7,
			nil,
		},
	}
	a := &decisionAnswer{}
	a.meta.Fields, a.inner.Fields = map[string]*structpb.Value{}, map[string]*structpb.Value{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var eps []framework.Endpoint
			for _, addr := range tt.targets {
				eps = append(eps, datastore.NewEndpoint(addr, "", "", nil))
			}
			b, err := proto.Marshal(a.fill(eps, tt.model, tt.base, tt.prefill, tt.bodyLen, tt.remove))
			if err != nil {
				t.Fatal(err)
			}
			got := &extprocv3.ProcessingResponse{}
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatal(err)
			}
			if want := wantDecision(tt.targets, tt.model, tt.base, tt.prefill, tt.bodyLen, tt.remove); !proto.Equal(got, want) {
				t.Fatalf("answer\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestChunkAnswerReuse sets one chunk answer for request and response chunks in turn and
// compares each with a fresh message.
func TestChunkAnswerReuse(t *testing.T) {
	tests := []struct {
		name    string
		request bool
		chunk   string
		eos     bool
	}{
		{"request chunk", true, "first", false},
		{"last request chunk", true, "second", true},
		{"response chunk", false, "data: x\n\n", false},
		{"empty last response chunk", false, "", true},
		{"request again", true, "third", true},
	}
	var c chunkAnswer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
				Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{Body: []byte(tt.chunk), EndOfStream: tt.eos},
				},
			}}}
			want := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: body}}
			if tt.request {
				want = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: body}}
			}
			wb, _ := proto.Marshal(want)
			gb, err := proto.Marshal(c.set(tt.request, []byte(tt.chunk), tt.eos))
			if err != nil {
				t.Fatal(err)
			}
			if string(gb) != string(wb) {
				t.Fatalf("wire bytes %x, want %x", gb, wb)
			}
		})
	}
}
