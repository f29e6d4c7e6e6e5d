package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/podreplay"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

const header = "target,index,client_region,scheduled_ms,sent_ms,ttft_ms,e2e_ms,prompt_tokens,cached_tokens,output_tokens,status,error,cluster,served_region,route,endpoint"

// A pod whose measured TTFTs are what the engine gives for its arrivals replays to the same
// figures, overflowed requests included (they reach the pod a round trip after they were sent,
// and their TTFT includes it); the other target's and the failed requests are left out.
func TestReplayMatchesTheEngine(t *testing.T) {
	const ts = 2.0
	type req struct {
		index          int
		client         string
		sent           time.Duration // real
		prompt, output int
	}
	reqs := []req{
		{1, "us-west-2", 0, 3000, 40},
		{2, "us-east-1", 10 * time.Millisecond, 500, 30}, // 70 ms simulated away
		{3, "us-west-2", 30 * time.Millisecond, 2000, 20},
	}
	prof, err := profile.Lookup("l40s")
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.DefaultConfig()
	ecfg.Profile = prof
	in := make([]podreplay.Request, len(reqs))
	rtt := []time.Duration{0, 70 * time.Millisecond, 0}
	for i, r := range reqs {
		in[i] = podreplay.Request{
			ID:           i,
			Arrival:      time.Duration(float64(r.sent)/ts) + rtt[i],
			PromptTokens: r.prompt,
			OutputTokens: r.output,
		}
	}
	res, err := podreplay.Replay(podreplay.Config{Engine: ecfg}, in)
	if err != nil {
		t.Fatal(err)
	}
	ttfts := make([]time.Duration, len(reqs)) // by request, not in arrival order
	for _, r := range res {
		ttfts[r.ID] = r.TTFT
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d.Microseconds())/1000) }
	for i, r := range reqs {
		ttft := time.Duration(float64(ttfts[i]+rtt[i]) * ts)
		fmt.Fprintf(&b, "global,%d,%s,%s,%s,%s,9000.000,%d,0,%d,200,,usw2-a,us-west-2,local,10.0.0.1:8000\n",
			r.index, r.client, ms(r.sent), ms(r.sent), ms(ttft), r.prompt, r.output)
	}
	b.WriteString("global,4,us-west-2,50.000,50.000,,0.000,100,0,0,429,status,usw2-a,us-west-2,local,10.0.0.1:8000\n")
	b.WriteString(
		"local-only,5,us-west-2,50.000,50.000,80.000,900.000,100,0,5,200,,usw2-a,us-west-2,local,10.0.0.2:8000\n",
	)
	path := filepath.Join(t.TempDir(), "s.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"--samples=" + path, "--requests", "--hold-prefill-tokens=4096"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	if !strings.Contains(
		text,
		"pod 10.0.0.1:8000 (cluster usw2-a, l40s): 3 requests replayed, 1 failed ones left out; 3 reported",
	) ||
		strings.Contains(text, "10.0.0.2") {
		t.Fatalf("output:\n%s", text)
	}
	field := func(prefix string) []string {
		for _, l := range strings.Split(text, "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return f
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, text)
		return nil
	}
	m, r := field("measured"), field("replayed ")
	if strings.Join(m[1:], " ") != strings.Join(r[1:], " ") {
		t.Fatalf("measured %v, replayed %v: want the same", m, r)
	}
	// Request 3 (2,000 tokens, at 15 ms simulated) waits for request 1's step, then shares its
	// own with request 2 (500 tokens, at 75 ms once its round trip is counted), which arrived
	// after it; request 2, the last to arrive, is delayed by no later one.
	if f := field("3 "); f[3] != f[4] || f[5] == "0" {
		t.Fatalf("request 3: %v, want measured = replayed and a delay by later arrivals", f)
	}
	if f := field("2 "); f[3] != f[4] || f[5] != "0" {
		t.Fatalf("request 2: %v, want measured = replayed and no delay by later arrivals", f)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.csv")
	row := "global,1,us-east-1,0.000,0.000,100.000,900.000,100,0,5,200,,%s,us-east-1,local,10.0.0.1:8000\n"
	if err := os.WriteFile(path, []byte(header+"\n"+fmt.Sprintf(row, "nowhere")), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("a,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no samples", nil, 2, "--samples is required"},
		{"argument", []string{"--samples=" + path, "x"}, 2, "unexpected argument"},
		{"time scale", []string{"--samples=" + path, "--time-scale=0"}, 2, "--time-scale"},
		{"hold", []string{"--samples=" + path, "--hold-prefill-tokens=-1"}, 2, "--hold-prefill-tokens"},
		{"scenario", []string{"--samples=" + path, "--scenario=mars"}, 2, "mars"},
		{"missing file", []string{"--samples=" + filepath.Join(dir, "none.csv")}, 1, "none.csv"},
		{"not samples", []string{"--samples=" + bad}, 1, "header"},
		{"no pod", []string{"--samples=" + path, "--target=local-only"}, 2, `no request of target "local-only"`},
		{"unknown cluster", []string{"--samples=" + path}, 2, `names no cluster "nowhere": pass --profile`},
		{"bad profile", []string{"--samples=" + path, "--profile=tpu"}, 2, "tpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tc.code, tc.want)
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := run(
		[]string{"--samples=" + path, "--profile=l40s", "--later=false"},
		&out,
		&errOut,
	); code != 0 ||
		strings.Contains(out.String(), "later") {
		t.Fatalf("with --profile: exit %d, %s%s", code, out.String(), errOut.String())
	}
}
