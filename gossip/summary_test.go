package gossip_test

import (
	"fmt"

	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// testSummary builds a summary with models × adapters entries and, when sketchItems > 0, a
// cluster-wide prefix sketch holding that many hashes. load varies the figures.
func testSummary(models, adapters, sketchItems int, load uint32) *gossipv1.CapacitySummary {
	s := &gossipv1.CapacitySummary{}
	for i := 0; i < models; i++ {
		m := &gossipv1.ModelCapacity{
			Name:                   fmt.Sprintf("org-%d/model-%02d-8b-instruct", i%4, i),
			ReadyPods:              8 + uint32(i%3),
			TotalKvTokens:          3_200_000,
			FreeKvTokens:           1_000_000 + uint64(load)*1000 + uint64(i),
			QueueDepth:             load + uint32(i%5),
			Running:                40 + load,
			Saturation:             float32(i%8) / 8,
			Saturated:              i%8 == 7,
			PredictedTtftMs:        85.5 + float32(load),
			PrefillTokensPerSecond: 240_000,
			DecodeTokensPerSecond:  9_000 + float32(load),
		}
		for j := 0; j < adapters; j++ {
			m.Adapters = append(m.Adapters, &gossipv1.AdapterCapacity{
				Name: fmt.Sprintf(
					"tenant-%02d-lora-%02d",
					j,
					i,
				),
				ResidentPods: uint32(1 + j%4),
				QueueDepth:   uint32(j % 3),
				Running:      uint32(j),
			})
		}
		s.Models = append(s.Models, m)
	}
	if sketchItems > 0 {
		b, _ := sketch.NewForCapacity(sketchItems, 0.01, 99)
		for i := 0; i < sketchItems; i++ {
			b.Add(uint64(i)*0x9e3779b97f4a7c15 + uint64(load))
		}
		s.PrefixSketch = b.Proto()
	}
	return s
}
