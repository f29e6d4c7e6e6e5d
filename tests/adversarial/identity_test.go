package adversarial

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/contract/poll"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestGossipKeyCannotRedirectPrompts: a node holding the gossip key but not the cluster's
// signing key advertises the registered cluster's name with its own URL, as a rogue gateway
// (signed with a key of its own) and as forged summaries under the real gateway's node name
// (unsigned, one with sequence 2^64-1). The router ignores and counts every one of them, all
// traffic still goes to the real cluster's pod, and the real gateway's summaries keep arriving.
func TestGossipKeyCannotRedirectPrompts(t *testing.T) {
	w := newWorld(t)
	realKey, realPub := idSigningKeyFile(t, w, "real")
	rogueKey, _ := idSigningKeyFile(t, w, "rogue")
	realPod := w.Pod("h100")
	realGw := w.Gateway(
		"adv-id",
		"us-east-1",
		[]string{"real-pod=" + realPod.Listen},
		"--summary-signing-key-file="+realKey,
	)
	router := w.Router("us-east-1", "", "--allow-cleartext-gateways")
	admin, token := "http://"+router.Admin, w.Token()
	ctx := context.Background()
	if err := harness.WaitClusters(ctx, admin, token, 1, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	realURL := "http://" + realGw.Listen
	idAdminCall(t, admin, token, "RegisterCluster", map[string]any{"registration": map[string]any{
		"cluster": "adv-id", "region": "us-east-1", "gateway_urls": []string{realURL},
		"public_keys": []string{base64.StdEncoding.EncodeToString(realPub)},
	}}, nil)
	poll.Until(t, 15*time.Second, func() bool {
		var resp struct {
			Mode string `json:"identityMode"`
		}
		idAdminCall(t, admin, token, "ListRegistrations", map[string]any{}, &resp)
		return resp.Mode == "strict"
	}, "strict identity mode")

	intruderPod := w.Pod("h100")
	intruder := w.Gateway(
		"adv-id",
		"us-east-1",
		[]string{"intruder-pod=" + intruderPod.Listen},
		"--summary-signing-key-file="+rogueKey,
	)
	realNode := idMemberName(t, admin, token, realURL)
	idInject(t, w, router, &gossipv1.CapacitySummary{Node: realNode, Sequence: math.MaxUint64,
		Cluster: "adv-id", Region: "us-east-1", GatewayUrl: "http://" + intruder.Listen})
	idInject(
		t,
		w,
		router,
		&gossipv1.CapacitySummary{Node: realNode, Sequence: uint64(time.Now().Add(10 * time.Second).UnixNano()),
			Cluster: "adv-id", Region: "us-east-1", GatewayUrl: "http://" + intruder.Listen},
	)

	poll.Until(t, 30*time.Second, func() bool {
		return harness.MetricValue(
			t,
			router.Metrics,
			"switchyard_router_summaries_rejected_total",
			"reason=unknown_key",
		) >= 1 &&
			harness.MetricValue(t, router.Metrics, "switchyard_router_summaries_rejected_total", "reason=unsigned") >= 1 &&
			harness.MetricValue(t, router.Metrics, "switchyard_gossip_summaries_rejected_total", "reason=clock_skew") >= 1
	}, "the rogue gateway's and the forged summaries are counted")
	// Past the summary TTL (3 s), the real gateway's updates still arrive: nothing froze them.
	time.Sleep(4 * time.Second)
	urls, stale, age := idClusterState(t, admin, token, "adv-id")
	if stale || age > 3000 || len(urls) != 1 || urls[0] != realURL {
		t.Fatalf(
			"cluster adv-id: gateway urls %v, stale %v, signal age %d ms; want only %s, fresh",
			urls,
			stale,
			age,
			realURL,
		)
	}
	for i := range 20 {
		body := `{"model":"` + harness.TestModel + `","prompt":"secret prompt ` + strconv.Itoa(i) + `","max_tokens":2}`
		resp, err := http.Post("http://"+router.Listen+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("x-switchyard-endpoint") != "real-pod" {
			t.Fatalf("request %d: status %d, served by %q; want 200 from the real pod, real-pod (not intruder-pod)",
				i, resp.StatusCode, resp.Header.Get("x-switchyard-endpoint"))
		}
	}
	if got := harness.MetricValue(t, intruderPod.Listen, "vllm:num_requests_running"); got != 0 {
		t.Errorf("intruder pod is running %v requests", got)
	}
}

// idSigningKeyFile writes a fresh Ed25519 signing key as a PEM file and returns its path and
// public key.
func idSigningKeyFile(t *testing.T, w *harness.World, name string) (string, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return w.Write(name+".key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))), pub
}

// idInject joins the pool with the World's gossip key and sends router one summary chunk, encoded
// by the wire format of docs/gossip.md, exactly as given: no signature, any sequence.
func idInject(t *testing.T, w *harness.World, router *harness.Node, s *gossipv1.CapacitySummary) {
	t.Helper()
	s.GeneratedAtUnixNano = time.Now().UnixNano()
	s.Models = []*gossipv1.ModelCapacity{
		{Name: harness.TestModel, ReadyPods: 64, TotalKvTokens: 1 << 30, FreeKvTokens: 1 << 30},
	}
	blob, err := gossip.EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	msg := append([]byte{0x01}, binary.AppendUvarint(nil, uint64(len(s.GetNode())))...)
	msg = append(msg, s.GetNode()...)
	msg = binary.AppendUvarint(msg, s.GetSequence())
	msg = binary.AppendUvarint(msg, 0) // chunk index
	msg = binary.AppendUvarint(msg, 1) // chunk count
	msg = append(msg, blob...)

	keys, err := gossip.LoadKeyFile(w.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c := memberlist.DefaultLANConfig()
	c.Name = fmt.Sprintf("injector-%d", time.Now().UnixNano())
	c.BindAddr, c.BindPort, c.AdvertisePort = "127.0.0.1", 0, 0
	if c.Keyring, err = memberlist.NewKeyring(keys, keys[0]); err != nil {
		t.Fatal(err)
	}
	c.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	if _, err := ml.Join([]string{router.Gossip}); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(router.Gossip)
	for _, m := range ml.Members() {
		if m.Addr.String() == host && strconv.Itoa(int(m.Port)) == port {
			if err := ml.SendReliable(m, msg); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("router %s not among the members", router.Gossip)
}

// idAdminCall calls one AdminService method with the Connect protocol (JSON) and decodes the answer
// into out (when not nil).
func idAdminCall(t *testing.T, admin, token, method string, req, out any) {
	t.Helper()
	b, _ := json.Marshal(req)
	hr, err := http.NewRequest(http.MethodPost, admin+"/switchyard.admin.v1.AdminService/"+method, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s: %v: %s", method, err, body)
		}
	}
}

// idMemberName returns the gossip node name of the member advertising url.
func idMemberName(t *testing.T, admin, token, url string) string {
	t.Helper()
	var resp struct {
		Members []struct{ Name, URL string } `json:"members"`
	}
	idAdminCall(t, admin, token, "ListMembers", map[string]any{}, &resp)
	for _, m := range resp.Members {
		if m.URL == url {
			return m.Name
		}
	}
	t.Fatalf("no member advertises %s: %+v", url, resp.Members)
	return ""
}

// idClusterState returns a cluster's gateway URLs, staleness and signal age as the router lists it.
func idClusterState(t *testing.T, admin, token, name string) (urls []string, stale bool, ageMs int) {
	t.Helper()
	urls, stale, ageMs, listed := listedCluster(t, admin, token, name)
	if listed == nil {
		return urls, stale, ageMs
	}
	t.Fatalf("cluster %s not listed: %v", name, listed)
	return nil, false, 0
}

// listedCluster returns a cluster's gateway URLs, staleness and signal age as the router lists
// it; when it is not listed, the names of the clusters that are (non-nil, perhaps empty).
func listedCluster(t *testing.T, admin, token, name string) (urls []string, stale bool, ageMs int, listed []string) {
	t.Helper()
	var resp struct {
		Clusters []struct {
			Name        string   `json:"name"`
			GatewayURLs []string `json:"gatewayUrls"`
			Stale       bool     `json:"stale"`
			SignalAgeMs int      `json:"signalAgeMs"`
		} `json:"clusters"`
	}
	idAdminCall(t, admin, token, "ListClusters", map[string]any{}, &resp)
	listed = []string{}
	for _, c := range resp.Clusters {
		if c.Name == name {
			return c.GatewayURLs, c.Stale, c.SignalAgeMs, nil
		}
		listed = append(listed, c.Name)
	}
	return nil, false, 0, listed
}
