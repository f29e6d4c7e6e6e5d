package adversarial

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestRegionalPoolsDigestTrust runs two regions as regional gossip pools, each with two gateways
// and two routers, and a pool of aggregators (one in us-east-1, both routers of eu-west-1),
// every cluster and both regions registered. A us-east-1 router that is not an aggregator learns
// eu-west-1's clusters from the region digest relayed into its pool and, once its own clusters
// are saturated (their pods gone), overflows requests to them. A digest for eu-west-1 signed
// with another key, sent into us-east-1's pool by a holder of the gossip key, is ignored and
// counted. When eu-west-1's aggregators stop, its clusters go stale at the us-east-1 router.
func TestRegionalPoolsDigestTrust(t *testing.T) {
	t.Parallel() // correctness only, no timing: runs beside the suite's other parallel tests
	w := newWorld(t)
	w.RegionalPools = true
	const east, west = "us-east-1", "eu-west-1"
	type cluster struct {
		name, region string
		pod, gw      *harness.Node
		pub          ed25519.PublicKey
	}
	var clusters []*cluster
	for _, c := range []struct{ name, region string }{{"ra1", east}, {"ra2", east}, {"rb1", west}, {"rb2", west}} {
		keyFile, pub := idSigningKeyFile(t, w, c.name)
		pod := w.Pod("h100")
		gw := w.Gateway(c.name, c.region, []string{c.name + "-pod=" + pod.Listen}, "--summary-signing-key-file="+keyFile)
		clusters = append(clusters, &cluster{name: c.name, region: c.region, pod: pod, gw: gw, pub: pub})
	}
	eastKey, eastPub := idSigningKeyFile(t, w, "region-east")
	westKey, westPub := idSigningKeyFile(t, w, "region-west")
	wan := func() string {
		addr, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return addr
	}
	wanEast := wan()
	aggregator := func(addr, key string, join ...string) []string {
		args := []string{"--allow-cleartext-gateways", "--gossip-aggregator", "--gossip-wan-bind=" + addr,
			"--region-signing-key-file=" + key}
		if len(join) > 0 {
			args = append(args, "--gossip-wan-join="+strings.Join(join, ","))
		}
		return args
	}
	eastAgg := w.Router(east, "", aggregator(wanEast, eastKey)...)
	etcd := eastAgg.EtcdURL()
	eastRouter := w.Router(east, etcd, "--allow-cleartext-gateways")
	westAgg1 := w.Router(west, etcd, aggregator(wan(), westKey, wanEast)...)
	westAgg2 := w.Router(west, etcd, aggregator(wan(), westKey, wanEast)...)

	admin, token := "http://"+eastRouter.Admin, w.Token()
	for _, c := range clusters {
		idAdminCall(t, admin, token, "RegisterCluster", map[string]any{"registration": map[string]any{
			"cluster": c.name, "region": c.region, "gateway_urls": []string{"http://" + c.gw.Listen},
			"public_keys": []string{base64.StdEncoding.EncodeToString(c.pub)},
		}}, nil)
	}
	for region, pub := range map[string]ed25519.PublicKey{east: eastPub, west: westPub} {
		idAdminCall(t, admin, token, "RegisterRegion", map[string]any{"registration": map[string]any{
			"region": region, "public_keys": []string{base64.StdEncoding.EncodeToString(pub)},
		}}, nil)
	}
	fresh := func(name string) bool {
		urls, stale, _ := regionsClusterState(t, admin, token, name)
		return !stale && len(urls) > 0
	}
	poll.Until(t, 60*time.Second, func() bool {
		return fresh("ra1") && fresh("ra2") && fresh("rb1") && fresh("rb2")
	}, "the east router lists its own clusters and eu-west-1's, from the digest, fresh")
	if urls, _, _ := regionsClusterState(
		t,
		admin,
		token,
		"rb1",
	); len(urls) != 1 ||
		urls[0] != "http://"+clusters[2].gw.Listen {
		t.Fatalf("rb1's gateway URLs at the east router: %v, want %s", urls, "http://"+clusters[2].gw.Listen)
	}

	// A holder of the gossip key joins us-east-1's pool and sends a digest for eu-west-1 that
	// lists a cluster of its own, signed with a key of its own.
	_, rogue, _ := ed25519.GenerateKey(nil)
	forger := regionsForger(t, w, eastRouter.Gossip)
	if _, err := forger.PublishDigest(&gossipv1.RegionDigest{Region: west, Clusters: []*gossipv1.DigestCluster{{
		Cluster: "rb1", GatewayUrls: []string{"http://127.0.0.1:1"},
		Models: []*gossipv1.ModelCapacity{{Name: harness.TestModel, ReadyPods: 64, TotalKvTokens: 1 << 30,
			FreeKvTokens: 1 << 30}},
	}}}, rogue); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, func() bool {
		return harness.MetricValue(t, eastRouter.Metrics, "switchyard_router_digests_rejected_total",
			"reason=unknown_key") >= 1
	}, "the forged digest is rejected and counted")
	if urls, _, _ := regionsClusterState(
		t,
		admin,
		token,
		"rb1",
	); len(urls) != 1 ||
		urls[0] != "http://"+clusters[2].gw.Listen {
		t.Fatalf("rb1's gateway URLs after the forged digest: %v", urls)
	}

	// us-east-1's pods go away: its clusters are saturated, and the east router overflows to
	// eu-west-1's clusters, which it knows only from the digest.
	clusters[0].pod.Kill()
	clusters[1].pod.Kill()
	poll.UntilState(t, 60*time.Second, func() (bool, string) {
		region, route, status := regionsComplete(t, eastRouter.Listen)
		return status == http.StatusOK && region == west && route == "overflow",
			"served by " + region + "/" + route + ", status " + http.StatusText(status)
	}, "a request overflows to eu-west-1")

	// eu-west-1's aggregators stop: its clusters age out at the east router.
	for _, r := range []*harness.Node{westAgg1, westAgg2} {
		if err := r.Stop(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 60*time.Second, func() bool {
		_, stale1, _ := regionsClusterState(t, admin, token, "rb1")
		_, stale2, _ := regionsClusterState(t, admin, token, "rb2")
		return stale1 && stale2
	}, "eu-west-1's clusters go stale once its aggregators are gone")
}

// regionsForger joins the pool at seed as a router node holding the World's gossip key.
func regionsForger(t *testing.T, w *harness.World, seed string) *gossip.Node {
	t.Helper()
	keys, err := gossip.LoadKeyFile(w.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c := gossip.DefaultLANConfig()
	c.NodeName, c.Role, c.Region = "forger", gossip.RoleRouter, "us-east-1"
	c.BindAddr, c.BindPort, c.Keys, c.Seeds = "127.0.0.1", 0, keys, []string{seed}
	n, err := gossip.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-n.Ready()
	poll.Until(t, 30*time.Second, func() bool { return len(n.Members()) > 1 }, "the forger joins the pool")
	return n
}

// regionsClusterState returns a cluster's gateway URLs, staleness and signal age as the router
// lists it (nil URLs and stale when it is not listed).
func regionsClusterState(t *testing.T, admin, token, name string) (urls []string, stale bool, ageMs int) {
	t.Helper()
	urls, stale, ageMs, listed := listedCluster(t, admin, token, name)
	if listed != nil {
		return nil, true, 0
	}
	return urls, stale, ageMs
}

// regionsComplete sends one completion to a router and returns the serving region, the route
// and the status.
func regionsComplete(t *testing.T, addr string) (region, route string, status int) {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", "", 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("x-switchyard-region"), resp.Header.Get("x-switchyard-route"), resp.StatusCode
}
