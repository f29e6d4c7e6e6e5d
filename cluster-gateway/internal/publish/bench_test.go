package publish_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
)

// benchPublisher returns a publisher over 100 pods serving 20 base models (5 pods each, two
// adapters per pod), with hot prefixes when withSketch.
func benchPublisher(b *testing.B, withSketch bool) *publish.Publisher {
	clk := newClock()
	var specs []podSpec
	hot := fakePrefixes{}
	for i := range 100 {
		model := fmt.Sprintf("model-%02d", i%20)
		adapters := []string{model + "-lora-a", model + "-lora-b"}
		specs = append(
			specs,
			podSpec{base: model, adapters: adapters, m: lora(kv(i%7, i%13, float64(i%10)/10), adapters[:1], adapters[1:])},
		)
		h := make([]uint64, 2048)
		for j := range h {
			h[j] = uint64(i*4096 + j)
		}
		hot[model] = h
	}
	opts := publish.Options{Now: clk.Now}
	if withSketch {
		opts.Prefixes = hot
	}
	p, err := publish.New(publish.DefaultConfig(), newView(b, clk.Now(), specs...).View(), &recordingSink{}, opts)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkBuild(b *testing.B) {
	for _, tt := range []struct {
		name   string
		sketch bool
	}{{"100pods-20models", false}, {"100pods-20models-sketch", true}} {
		b.Run(tt.name, func(b *testing.B) {
			p := benchPublisher(b, tt.sketch)
			b.ReportAllocs()
			for b.Loop() {
				p.Build()
			}
			b.ReportMetric(float64(proto.Size(p.Build())), "summary-bytes")
		})
	}
}
