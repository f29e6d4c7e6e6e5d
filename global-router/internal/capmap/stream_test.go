package capmap_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

const waitTimeout = 20 * time.Second

// TestEventsStream: a logged-in browser gets the cluster grid at once, then the decisions and
// flows as the front door reports outcomes.
func TestEventsStream(t *testing.T) {
	e := newEnv(t, false, nil)
	resp, r := openEvents(t, e, e.loggedIn(t))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	snap, err := nextSnapshot(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Region != "us-east-1" || len(snap.Regions) != 2 {
		t.Fatalf("first snapshot %+v, want two regions", snap)
	}
	var east capmap.Region
	for _, reg := range snap.Regions {
		if reg.Name == "us-east-1" {
			east = reg
		}
	}
	if !east.Local || len(east.Clusters) != 1 || east.Clusters[0].Name != "c1" || east.Clusters[0].FreeKV != 400_000 ||
		east.Clusters[0].ReadyPods != 2 || east.Clusters[0].RTTMs != 12.5 || east.FreeKV != 400_000 {
		t.Errorf("us-east-1 in the snapshot: %+v", east)
	}
	for range 3 {
		e.rec.RecordOutcome(frontdoor.Outcome{Time: time.Now(), Model: "llama", Cluster: "c2", Region: "eu-west-1",
			Outcome: "overflow", LeftBecause: contract.ReasonUnavailable})
	}
	poll.UntilNil(t, waitTimeout, func() error {
		snap, err := nextSnapshot(t, r)
		if err != nil {
			return err
		}
		if len(snap.Decisions) != 3 || snap.Decisions[0].Cluster != "c2" || snap.Decisions[0].Reason != "unavailable" {
			return fmt.Errorf("decisions %+v", snap.Decisions)
		}
		if len(snap.Flows) != 1 || snap.Flows[0] != (capmap.Flow{From: "us-east-1", To: "eu-west-1", Total: 3,
			PerSecond: snap.Flows[0].PerSecond}) {
			return fmt.Errorf("flows %+v", snap.Flows)
		}
		return nil
	}, "the decisions and flows streamed")
	if g := gauge(t, e, "switchyard_router_capacity_map_streams"); g != 1 {
		t.Errorf("streams gauge %v with one stream open", g)
	}
}

// TestEventsBounded: the event streams are bounded: a cap on concurrent streams (503,
// counted), one message per Interval, a write deadline that ends the stream of a browser that
// does not read, and the stream ends with its session and at shutdown.
func TestEventsBounded(t *testing.T) {
	t.Run("concurrent streams capped", func(t *testing.T) {
		e := newEnv(t, false, func(c *capmap.Config) { c.MaxStreams = 1 })
		c := e.loggedIn(t)
		resp, r := openEvents(t, e, c)
		if _, err := nextSnapshot(t, r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("first stream: %d %v", resp.StatusCode, err)
		}
		if g := gauge(t, e, "switchyard_router_capacity_map_streams"); g != 1 {
			t.Errorf("streams gauge %v, want 1", g)
		}
		resp2, body := get(t, c, e.srv.URL+"/map/events")
		if resp2.StatusCode != http.StatusServiceUnavailable || resp2.Header.Get("Retry-After") == "" ||
			!isOpenAIError(body) {
			t.Fatalf("second stream: %d %s, want 503 with Retry-After", resp2.StatusCode, body)
		}
		if got := counter(t, e.reg, "switchyard_router_capacity_map_refused_total", "reason",
			"too_many_streams"); got != 1 {
			t.Errorf("too_many_streams counted %v, want 1", got)
		}
		resp.Body.Close()
		poll.Until(t, waitTimeout, func() bool { return gauge(t, e, "switchyard_router_capacity_map_streams") == 0 },
			"the slot given back when the browser leaves")
		resp3, r3 := openEvents(t, e, c)
		if _, err := nextSnapshot(t, r3); err != nil || resp3.StatusCode != http.StatusOK {
			t.Fatalf("stream after the first left: %d %v", resp3.StatusCode, err)
		}
	})
	t.Run("one message per interval", func(t *testing.T) {
		e := newEnv(t, false, func(c *capmap.Config) { c.Interval = 100 * time.Millisecond })
		_, r := openEvents(t, e, e.loggedIn(t))
		n := 0
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if _, err := nextSnapshot(t, r); err != nil {
				t.Fatal(err)
			}
			n++
		}
		// 11 at most at 100 ms; the bound is loose so a slow machine passes, and an unpaced
		// stream would send thousands.
		if n > 20 || n < 2 {
			t.Fatalf("%d messages in a second at a 100 ms interval", n)
		}
	})
	t.Run("a browser that does not read loses its stream", func(t *testing.T) {
		var many []*adminv1.Cluster
		for i := range 1000 {
			many = append(many, cluster(fmt.Sprintf("cluster-%04d-%s", i, strings.Repeat("x", 60)), "us-east-1", 1))
		}
		e := newEnv(t, false, func(c *capmap.Config) {
			c.Interval, c.WriteTimeout, c.MaxStreams = time.Millisecond, 200*time.Millisecond, 1
		}, many...)
		cookie := sessionCookie(t, e)
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096)
		}
		fmt.Fprintf(conn, "GET /map/events HTTP/1.1\r\nHost: x\r\nCookie: %s=%s\r\n\r\n", capmap.CookieName, cookie)
		// Never read: the server's writes fill the socket buffers and miss their deadline.
		poll.Until(t, waitTimeout, func() bool {
			return counter(t, e.reg, "switchyard_router_capacity_map_stream_ends_total", "reason", "write_failed") == 1 &&
				gauge(t, e, "switchyard_router_capacity_map_streams") == 0
		}, "the stuck stream ended by its write deadline and its slot given back")
	})
	t.Run("the session ends the stream", func(t *testing.T) {
		e := newEnv(t, false, nil)
		_, r := openEvents(t, e, e.loggedIn(t))
		if _, err := nextSnapshot(t, r); err != nil {
			t.Fatal(err)
		}
		e.tokens.replace("rotated-token") // the session's token rotated out
		if err := drain(r); err != nil {
			t.Fatal(err)
		}
		if got := counter(t, e.reg, "switchyard_router_capacity_map_stream_ends_total", "reason",
			"session_ended"); got != 1 {
			t.Errorf("session_ended counted %v, want 1", got)
		}
	})
	t.Run("shutdown ends the stream", func(t *testing.T) {
		e := newEnv(t, false, nil)
		_, r := openEvents(t, e, e.loggedIn(t))
		if _, err := nextSnapshot(t, r); err != nil {
			t.Fatal(err)
		}
		e.cancel()
		if err := drain(r); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("streams end after MaxStreamDuration", func(t *testing.T) {
		e := newEnv(t, false, func(c *capmap.Config) { c.MaxStreamDuration = 300 * time.Millisecond })
		_, r := openEvents(t, e, e.loggedIn(t))
		if err := drain(r); err != nil {
			t.Fatal(err)
		}
		if got := counter(t, e.reg, "switchyard_router_capacity_map_stream_ends_total", "reason",
			"max_duration"); got != 1 {
			t.Errorf("max_duration counted %v, want 1", got)
		}
	})
}

// drain reads the stream to its end, failing if it does not end within waitTimeout.
func drain(r io.Reader) error {
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		return nil
	case <-time.After(waitTimeout):
		return errors.New("the stream did not end")
	}
}

// sessionCookie logs in and returns the session cookie's value.
func sessionCookie(t *testing.T, e *env) string {
	t.Helper()
	c := e.client(t)
	resp, _ := e.login(t, c, token, nil)
	u, _ := url.Parse(e.srv.URL + "/map/")
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == capmap.CookieName {
			return ck.Value
		}
	}
	t.Fatalf("no session cookie after login (%d)", resp.StatusCode)
	return ""
}

// gauge returns the value of an unlabelled gauge or counter.
func gauge(t *testing.T, e *env, name string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			if c := mf.GetMetric()[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
