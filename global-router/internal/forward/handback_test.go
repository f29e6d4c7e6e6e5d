package forward_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// A first choice offered to be handed back gets the offer as x-switchyard-hand-back-ms; when its
// gateway hands the request back (429, x-switchyard-overflow), the cluster's other replica is
// skipped and the next cluster answers, without the offer. A client cannot set the header itself.
func TestHandBackSkipsTheClusterAndOffersOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // replica → the hand-back headers it received
	handler := func(name string, handBack bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], r.Header.Get(contract.HeaderHandBack))
			mu.Unlock()
			if handBack && r.Header.Get(contract.HeaderHandBack) != "" {
				w.Header().Set(contract.HeaderOverflow, "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "served by "+name)
		}
	}
	home1, home2 := gateway(t, handler("home-1", true)), gateway(t, handler("home-2", true))
	away := gateway(t, handler("away", false))
	reg := prometheus.NewPedanticRegistry()
	f, err := forward.New(forward.DefaultConfig(), forward.NewMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	offer := 850 * time.Millisecond
	targets := []forward.Target{
		{Cluster: "home", URL: home1, Route: "local", HandBack: offer},
		{Cluster: "home", URL: home2, Route: "local", HandBack: offer},
		{Cluster: "away", URL: away, Route: "overflow"},
	}
	req, err := http.NewRequest(http.MethodPost, router(t, f, targets), strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(contract.HeaderHandBack, "1") // set by the client: never passed on
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "served by away" ||
		resp.Header.Get(contract.HeaderRoute) != "retry" {
		t.Fatalf(
			"answer %d %q route %q, want 200 from away as a retry",
			resp.StatusCode,
			body,
			resp.Header.Get(contract.HeaderRoute),
		)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen["home-1"]; len(got) != 1 || got[0] != "850" {
		t.Errorf("home-1 got hand-back headers %q, want one offer of 850 ms", got)
	}
	if got := seen["home-2"]; len(got) != 0 {
		t.Errorf("home-2, a replica of the cluster that handed the request back, was tried: %q", got)
	}
	if got := seen["away"]; len(got) != 1 || got[0] != "" {
		t.Errorf("away got hand-back headers %q, want one attempt without an offer", got)
	}
	want := `# HELP switchyard_router_attempts_total Attempts to forward a request to a cluster's gateway, by cluster and result (answered, refused: tried the next candidate, error: no answer, abandoned: the client went away first, handed_back: the gateway gave back a request the router offered to take elsewhere).
# TYPE switchyard_router_attempts_total counter
switchyard_router_attempts_total{cluster="away",result="answered"} 1
switchyard_router_attempts_total{cluster="home",result="handed_back"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_attempts_total"); err != nil {
		t.Error(err)
	}
}

// A 503 is no answer to the offer (a replica stopping, say): the cluster's other replica is
// still tried, with the offer, and serves.
func TestUnavailableReplicaIsNotAHandBack(t *testing.T) {
	var mu sync.Mutex
	var offers []string
	stopping := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	serving := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		offers = append(offers, r.Header.Get(contract.HeaderHandBack))
		mu.Unlock()
		_, _ = io.WriteString(w, "served by home-2")
	})
	f, err := forward.New(forward.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	targets := []forward.Target{
		{Cluster: "home", URL: stopping, Route: "local", HandBack: 300 * time.Millisecond},
		{Cluster: "home", URL: serving, Route: "local", HandBack: 300 * time.Millisecond},
	}
	resp, err := http.Post(router(t, f, targets), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusOK || string(body) != "served by home-2" || len(offers) != 1 || offers[0] != "300" {
		t.Fatalf(
			"answer %d %q, offers at the second replica %q; want it served there with the 300 ms offer",
			resp.StatusCode,
			body,
			offers,
		)
	}
}
