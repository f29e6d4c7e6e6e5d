package predictedttft_test

import (
	"context"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/predictedttft"
)

// peerEndpoint is a FakeEndpoint whose peer replicas report requests in flight, as
// datastore.Endpoint does with --replica-bind: InFlight includes them.
type peerEndpoint struct {
	*plugintest.FakeEndpoint
	peers, prefilling, tokens, sinceScrape int64
}

var _ framework.PeerLoad = (*peerEndpoint)(nil)

func (e *peerEndpoint) InFlight() int64 { return e.FakeEndpoint.InFlight() + e.peers }

func (e *peerEndpoint) InFlightSinceScrape() int64 {
	return e.FakeEndpoint.InFlightSinceScrape() + e.sinceScrape
}

func (e *peerEndpoint) PeerInFlight() framework.InFlightLoad {
	return framework.InFlightLoad{Requests: e.peers, Prefilling: e.prefilling, PrefillTokens: e.tokens}
}

func (e *peerEndpoint) PeerInFlightSinceScrape() int64 { return e.sinceScrape }

// Requests peer replicas sent to a pod since its scrape count against it, as this gateway's own
// do: of two pods equal by their scrapes, the one the peers just loaded predicts a later first
// token, whether or not first-token reports have arrived yet.
func TestPeerRequestsCount(t *testing.T) {
	for _, firstTokens := range []bool{false, true} {
		name := "before first tokens"
		if firstTokens {
			name = "with first tokens"
		}
		t.Run(name, func(t *testing.T) {
			quiet := plugintest.Endpoint("10.0.0.1:8000", "m", 0, 1, 0.1, plugintest.Epoch)
			busy := &peerEndpoint{
				FakeEndpoint: plugintest.Endpoint("10.0.0.2:8000", "m", 0, 1, 0.1, plugintest.Epoch),
				peers:        4, prefilling: 4, tokens: 4000, sinceScrape: 4,
			}
			eps := []framework.Endpoint{quiet, busy}
			h := plugintest.NewHandle(eps...)
			p, err := predictedttft.Factory("ttft", nil, h)
			if err != nil {
				t.Fatal(err)
			}
			s := p.(*predictedttft.Scorer)
			if firstTokens { // this gateway has a request of its own on each pod, past its first token
				for _, e := range eps {
					req := &framework.Request{PromptTokens: 500}
					s.PreRequest(context.Background(), req, &framework.Result{Targets: []framework.Endpoint{e}})
					s.FirstToken(context.Background(), req, &framework.ResponseInfo{Endpoint: e, Status: 200,
						TTFT: 50e6, CachedTokens: -1})
				}
				quiet.AddInFlight(1)
				busy.AddInFlight(1)
			}
			scores := make([]float64, 2)
			s.Score(context.Background(), &framework.CycleState{Now: h.Now()},
				&framework.Request{PromptTokens: 1000}, eps, scores)
			if scores[0] <= scores[1] {
				t.Fatalf("scores quiet %.3f, peer-loaded %.3f: want the quiet pod first", scores[0], scores[1])
			}
			if q, b := s.Predict(quiet, 1000, 0), s.Predict(busy, 1000, 0); b <= q {
				t.Fatalf("predicted TTFT quiet %v, peer-loaded %v: want the peer-loaded one later", q, b)
			}
		})
	}
}
