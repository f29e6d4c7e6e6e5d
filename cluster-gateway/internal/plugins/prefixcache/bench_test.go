package prefixcache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/prefixcache"
)

// BenchmarkScore scores 1,000 endpoints for a 64-block prompt whose first 32 blocks (a shared
// system prompt) are on every pod.
func BenchmarkScore(b *testing.B) {
	eps := make([]framework.Endpoint, 1000)
	for i := range eps {
		eps[i] = plugintest.Endpoint(fmt.Sprintf("10.0.%d.%d:80", i/256, i%256), "m", 0, 0, 0, plugintest.Epoch)
	}
	s, err := prefixcache.New("p", prefixcache.Params{})
	if err != nil {
		b.Fatal(err)
	}
	for i, e := range eps {
		s.PreRequest(context.Background(), prompt(32, 64, fmt.Sprint(i)), &framework.Result{Targets: []framework.Endpoint{e}})
	}
	req := prompt(32, 64, "query")
	scores := make([]float64, len(eps))
	b.ReportAllocs()
	for b.Loop() {
		cs := &framework.CycleState{}
		s.Score(context.Background(), cs, req, eps, scores)
		cs.Reset()
	}
}
