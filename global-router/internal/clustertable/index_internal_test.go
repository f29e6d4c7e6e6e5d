package clustertable

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Model names nobody lists share one entry list: names a client makes up cost no memory.
func TestIndexKeepsOnlyListedModels(t *testing.T) {
	src := &fixedSource{{Node: "a-gw", Cluster: "a", Region: "r", Summary: &gossipv1.CapacitySummary{
		Cluster: "a", Region: "r", GatewayUrl: "http://a",
		Models: []*gossipv1.ModelCapacity{{
			Name: "m", ReadyPods: 1, Adapters: []*gossipv1.AdapterCapacity{{Name: "m-sql"}},
		}},
	}}}
	tb := New(Config{Region: "r", Now: func() time.Time { return time.Unix(1000, 0) }}, src, nil)
	for i := range 100 {
		if v := tb.View(fmt.Sprintf("made-up-%d", i), nil); len(v) != 1 || v[0].Cluster.Lists {
			t.Fatalf("made-up model: %+v", v)
		}
	}
	if v := tb.View("m-sql", nil); !v[0].Cluster.Serves {
		t.Error("the adapter's base model does not serve it")
	}
	tb.View("m", nil)
	if got := len(*tb.idx.Load().models.Load()); got != 3 {
		t.Errorf("the index holds %d entry lists, want 3 (m, m-sql and the unlisted one)", got)
	}
}

// TestRegionalSourceSignals checks that a Regional over a pool that signals changes (a gossip
// node) hands the table that signal, so the index is rebuilt on change instead of being compared
// with a fresh snapshot on every view, and that one over a pool without a signal stays as it is.
func TestRegionalSourceSignals(t *testing.T) {
	signalling := NewRegional("us-east-1", signalPool{}, noDigests{}, nil, time.Minute, nil)
	if _, ok := signalling.Source().(subscriber); !ok {
		t.Fatal("a Regional over a signalling pool does not pass its signal on")
	}
	plain := NewRegional("us-east-1", plainPool{}, noDigests{}, nil, time.Minute, nil)
	if _, ok := plain.Source().(subscriber); ok {
		t.Fatal("a Regional over a pool without a signal claims one")
	}
}

type plainPool struct{}

func (plainPool) Snapshot() []gossip.Summary { return nil }

type signalPool struct{ plainPool }

func (signalPool) Subscribe() (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

type noDigests struct{}

func (noDigests) Digests() []gossip.Digest { return nil }
