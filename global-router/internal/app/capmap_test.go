package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/app"
	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
)

// TestCapacityMapOnAdminPort: the admin port serves the capacity map beside the admin API: it
// asks for the admin token, then shows the router's clusters and its requests' decisions; an
// open event stream does not hold up the router's shutdown. --capacity-map=false serves none.
func TestCapacityMapOnAdminPort(t *testing.T) {
	e := newEnv(t)
	r := startRouter(t, e, "router-capmap")
	base := "http://" + r.cfg.AdminListen
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/map/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("map without a session: %d, want 303 to the login form", resp.StatusCode)
	}
	resp, err = c.PostForm(base+"/map/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login with the admin token: %d", resp.StatusCode)
	}
	if resp, body := chat(t, r.cfg.Listen); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	poll.UntilNil(t, 30*time.Second, func() error {
		snap, err := mapSnapshot(c, base)
		if err != nil {
			return err
		}
		if len(snap.Regions) != 1 || snap.Regions[0].Name != region || len(snap.Regions[0].Clusters) != 2 {
			return fmt.Errorf("regions %+v", snap.Regions)
		}
		if len(snap.Decisions) == 0 || snap.Decisions[0].Cluster != e.preferred || snap.Decisions[0].Outcome != "local" {
			return fmt.Errorf("decisions %+v", snap.Decisions)
		}
		return nil
	}, "the map shows the clusters and the request's decision")
	// The admin API still answers on the same port.
	if _, err := r.admin.ListClusters(
		context.Background(),
		connect.NewRequest(&adminv1.ListClustersRequest{}),
	); err != nil {
		t.Fatalf("admin API beside the map: %v", err)
	}
	// A live stream ends at shutdown instead of holding the admin port's drain.
	req, _ := http.NewRequest(http.MethodGet, base+"/map/events", nil)
	stream, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if _, err := bufio.NewReader(stream.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.stop(t)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the router took %v to stop with a map stream open", d)
	}

	off := startRouterWith(t, e, "router-nomap", func(c *app.Config) { c.CapacityMap = false })
	resp, err = http.Get("http://" + off.cfg.AdminListen + "/map/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("map with --capacity-map=false: %d, want 404", resp.StatusCode)
	}
}

func mapSnapshot(c *http.Client, base string) (capmap.Snapshot, error) {
	var snap capmap.Snapshot
	resp, err := c.Get(base + "/map/snapshot")
	if err != nil {
		return snap, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return snap, fmt.Errorf("snapshot: %d", resp.StatusCode)
	}
	err = json.NewDecoder(resp.Body).Decode(&snap)
	return snap, err
}
