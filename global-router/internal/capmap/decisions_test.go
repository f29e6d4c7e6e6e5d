package capmap_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// TestRecorderBounded: the recorder keeps the last decisions, newest first, names cut to a
// bound, and answer counts for at most 64 regions (the rest, and invalid names, under other).
func TestRecorderBounded(t *testing.T) {
	r := capmap.NewRecorder(5)
	if got := r.Decisions(); len(got) != 0 {
		t.Fatalf("empty recorder lists %v", got)
	}
	t0 := time.Unix(1000, 0)
	for i := range 200 {
		r.RecordOutcome(frontdoor.Outcome{Time: t0.Add(time.Duration(i) * time.Second), Model: strings.Repeat("m", 1000),
			Cluster: fmt.Sprintf("c%d", i), Region: fmt.Sprintf("region-%03d", i), Outcome: "overflow"})
	}
	r.RecordOutcome(frontdoor.Outcome{Time: t0.Add(time.Hour), Region: "bad\xff", Outcome: "overflow"})
	r.RecordOutcome(frontdoor.Outcome{Time: t0.Add(2 * time.Hour), Outcome: "no_room"})
	got := r.Decisions()
	if len(got) != 5 || got[0].Outcome != "no_room" || got[2].Cluster != "c199" || got[4].Cluster != "c197" {
		t.Fatalf("decisions %+v, want the last 5, newest first", got)
	}
	if len(got[2].Model) != 128 {
		t.Errorf("model kept with %d bytes, want 128", len(got[2].Model))
	}
	answered := r.Answered()
	if len(answered) != 65 || answered["other"] != 200-64+1 || answered["region-000"] != 1 {
		t.Errorf("%d regions counted (other %d), want 64 and other (137)", len(answered), answered["other"])
	}
}

// TestConfigValidate names the invalid field.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		tune  func(*capmap.Config)
		field string
	}{
		{"no region", func(c *capmap.Config) { c.Region = "" }, "Region"},
		{"no interval", func(c *capmap.Config) { c.Interval = 0 }, "Interval"},
		{"no streams", func(c *capmap.Config) { c.MaxStreams = 0 }, "MaxStreams"},
		{"no write timeout", func(c *capmap.Config) { c.WriteTimeout = 0 }, "WriteTimeout"},
		{"short streams", func(c *capmap.Config) { c.MaxStreamDuration = time.Millisecond }, "MaxStreamDuration"},
		{"no sessions", func(c *capmap.Config) { c.MaxSessions = 0 }, "MaxSessions"},
		{"no login rate", func(c *capmap.Config) { c.LoginRate = 0 }, "LoginRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := capmap.DefaultConfig()
			c.Region = "us-east-1"
			tt.tune(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
	c := capmap.DefaultConfig()
	c.Region = "us-east-1"
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestFlowRates: a flow's rate is its answers over the flow window, from the snapshots' samples.
func TestFlowRates(t *testing.T) {
	now := time.Unix(5000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	e := newEnv(t, false, func(c *capmap.Config) { c.Now, c.Interval, c.FlowWindow = clock, time.Second, 10*time.Second })
	c := e.loggedIn(t)
	record := func(n int, region string) {
		for range n {
			e.rec.RecordOutcome(frontdoor.Outcome{Time: clock(), Cluster: "c", Region: region, Outcome: "overflow"})
		}
	}
	snapshot := func() capmap.Snapshot {
		resp, body := get(t, c, e.srv.URL+"/map/snapshot")
		var s capmap.Snapshot
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &s) != nil {
			t.Fatalf("snapshot: %d %s", resp.StatusCode, body)
		}
		return s
	}
	record(4, "eu-west-1")
	snapshot() // the first sample
	advance(2 * time.Second)
	record(10, "eu-west-1")
	record(4, "us-east-1")
	s := snapshot()
	want := []capmap.Flow{{From: "us-east-1", To: "eu-west-1", Total: 14, PerSecond: 5},
		{From: "us-east-1", To: "us-east-1", Total: 4, PerSecond: 2}}
	if len(s.Flows) != 2 || s.Flows[0] != want[0] || s.Flows[1] != want[1] {
		t.Fatalf("flows %+v, want %+v", s.Flows, want)
	}
	// Within Interval the same snapshot is served.
	record(100, "eu-west-1")
	if s2 := snapshot(); s2.Flows[0].Total != 14 {
		t.Errorf("snapshot rebuilt within its interval: %+v", s2.Flows)
	}
}
