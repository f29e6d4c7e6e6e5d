package gossip

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// previousModelCapacity returns ModelCapacity as the version before schema 2 knew it: without
// mean_predicted_ttft_ms (field 14).
func previousModelCapacity(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	fdp := protodesc.ToFileDescriptorProto(gossipv1.File_switchyard_gossip_v1_gossip_proto)
	for _, msg := range fdp.GetMessageType() {
		if msg.GetName() != "ModelCapacity" {
			continue
		}
		var kept []*descriptorpb.FieldDescriptorProto
		for _, f := range msg.GetField() {
			if f.GetNumber() != 14 {
				kept = append(kept, f)
			}
		}
		if len(kept) != len(msg.GetField())-1 {
			t.Fatal("ModelCapacity has no field 14")
		}
		msg.Field = kept
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("ModelCapacity")
}

// A reader of the version before schema 2 refuses a figure mask naming the mean TTFT (so
// publishers hold such masks back while it is alive, see featureSchema2Figures), but keeps the
// mean TTFT, as an unknown field, when it comes inside a model's figures as legacyDelta writes
// them, and hands it on intact.
func TestSchema2FiguresAndPreviousReaders(t *testing.T) {
	prev := previousModelCapacity(t)
	base := &gossipv1.ModelCapacity{Name: "m", ReadyPods: 2, PredictedTtftMs: 80, MeanPredictedTtftMs: 120}
	next := proto.Clone(base).(*gossipv1.ModelCapacity)
	next.MeanPredictedTtftMs = 200

	mask, values, ok := modelFigureSet.diff(base.ProtoReflect(), next.ProtoReflect())
	if !ok || mask != 1<<13 || len(values) != 1 {
		t.Fatalf("diff = %#x, %v, %v; want field 14 alone", mask, values, ok)
	}
	old := dynamicpb.NewMessage(prev)
	if err := modelFigureSet.apply(old, mask, values); !errors.Is(err, ErrMalformed) {
		t.Fatalf("previous reader applied a mask naming field 14: %v", err)
	}

	wire, err := proto.Marshal(modelFigures(next))
	if err != nil {
		t.Fatal(err)
	}
	old = dynamicpb.NewMessage(prev)
	if err := proto.Unmarshal(wire, old); err != nil {
		t.Fatal(err)
	}
	if len(old.GetUnknown()) == 0 {
		t.Fatal("previous reader did not keep the mean TTFT as an unknown field")
	}
	relayed, err := proto.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var got gossipv1.ModelCapacity
	if err := proto.Unmarshal(relayed, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetMeanPredictedTtftMs() != 200 || got.GetPredictedTtftMs() != 80 {
		t.Fatalf("relayed figures %v, want mean TTFT 200 and TTFT 80", &got)
	}
	if ownFeatures&featureSchema2Figures == 0 || deltaFeatures&featureSchema2Figures == 0 {
		t.Error("this version writes schema-2 masks without advertising or requiring featureSchema2Figures")
	}
}
