package clustertable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable/clustertabletest"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
)

// BenchmarkView measures the cluster table's view for one request over 100 clusters in four
// regions, each summary carrying a 1,024-hash prefix sketch (half of them holding the whole
// prompt) and re-published every 250 ms, with requests recorded as sent round-robin.
func BenchmarkView(b *testing.B) {
	prompt := []byte(fmt.Sprintf("%01200d", 7))
	hashes := prefix.Hashes(nil, "llama", prompt, 0)
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"}
	src := &clustertabletest.Republishing{Interval: 250 * time.Millisecond}
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("c%03d", i)
		bl, err := sketch.NewForCapacity(1024, 0.02, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		for j, h := range hashes {
			if j < 8 || i%2 == 0 {
				bl.Add(h)
			}
		}
		m := model("llama", 8)
		m.PrefixSketch = bl.Proto()
		region := regions[i%len(regions)]
		src.Summaries = append(
			src.Summaries,
			summary(names[i], region, names[i]+"-gw", "http://"+names[i], time.Now(), false, m),
		)
	}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", RTT: map[string]time.Duration{
		"us-west-2":  70 * time.Millisecond,
		"eu-west-1":  80 * time.Millisecond,
		"ap-south-1": 200 * time.Millisecond,
	}}, src, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := routeView(tb, "llama", hashes)
		if len(v) != len(names) || v[0].Cluster.CachedPrefixTokens == 0 {
			b.Fatalf("view of %d clusters, first caches %d tokens", len(v), v[0].Cluster.CachedPrefixTokens)
		}
		tb.Sent(names[i%len(names)])
		i++
	}
}
