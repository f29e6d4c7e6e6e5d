package adversarial

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestFlagsFileFailsClosed runs the real binaries with settings from a file of flag values and
// from the environment: a setting a file turns on is in force (a router whose --config holds
// require-cluster-identity refuses an unregistered gateway's summaries), the environment wins
// over the file and the command line over both, and a misspelt or malformed setting stops the
// binary at start with an error naming the file's line or the variable, instead of leaving a
// defence silently off.
func TestFlagsFileFailsClosed(t *testing.T) {
	w := newWorld(t)
	w.Gateway("flags-a", "us-east-1", []string{w.Pod("h100").Listen})
	strictFile := w.Write("strict.conf", "# identity is required\nrequire-cluster-identity\nlog-format = json")

	t.Run("a file's setting is in force", func(t *testing.T) {
		strict := w.RouterNoWait("us-east-1", "", "--config="+strictFile)
		poll.Until(t, 20*time.Second, func() bool {
			return metricValue(t, strict.Metrics, `switchyard_router_summaries_rejected_total{reason="unregistered"}`) > 0
		}, "the strict router rejecting the unregistered gateway's summaries")
		if code := statusOf(t, "http://"+strict.Metrics+"/readyz"); code != http.StatusServiceUnavailable {
			t.Fatalf("strict router /readyz = %d with only unregistered clusters, want 503", code)
		}
	})
	t.Run("the command line wins over the file", func(t *testing.T) {
		w.Router("us-east-1", "", "--config="+strictFile, "--require-cluster-identity=false") // waits for /readyz 200
	})
	t.Run("a misspelt flag in the file stops the router", func(t *testing.T) {
		file := w.Write("typo.conf", "log-format=json\nrequire-cluster-identiy\n")
		refusesToStart(
			t,
			"global-router",
			[]string{"--region=us-east-1", "--gossip-key-file=" + w.KeyFile, "--config=" + file},
			file+":2: unknown flag --require-cluster-identiy",
		)
	})
	t.Run("a bad value in the gateway's file stops it", func(t *testing.T) {
		file := w.Write(
			"gateway.flags",
			"cluster=flags-b\nregion=us-east-1\nendpoints=127.0.0.1:1\nmax-ejection-percent=half\n",
		)
		refusesToStart(
			t,
			"cluster-gateway",
			[]string{"--flags-file=" + file},
			file+`:4: invalid value "half" for --max-ejection-percent`,
		)
	})
	// The environment is inherited by the processes started from here on.
	t.Run("the environment wins over the file", func(t *testing.T) {
		t.Setenv("SWITCHYARD_REQUIRE_CLUSTER_IDENTITY", "false")
		w.Router("us-east-1", "", "--config="+strictFile) // waits for /readyz 200
	})
	t.Run("a bad variable stops the gateway", func(t *testing.T) {
		t.Setenv("SWITCHYARD_QUEUE_TTL", "soon")
		refusesToStart(t, "cluster-gateway", []string{"--cluster=flags-c", "--region=us-east-1", "--endpoints=127.0.0.1:1"},
			`environment SWITCHYARD_QUEUE_TTL="soon": invalid value for --queue-ttl`)
	})
}

// refusesToStart runs bin with args and checks that it exits with an error whose log says want.
func refusesToStart(t *testing.T, bin string, args []string, want string) {
	t.Helper()
	path, err := harness.FindBinary(binDir, bin)
	if err != nil {
		t.Fatal(err)
	}
	p := &harness.Process{Name: bin, Bin: path, Args: args, LogPath: filepath.Join(t.TempDir(), bin+".log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(60 * time.Second):
		_ = p.Stop(time.Second)
		t.Fatalf("%s kept running with a bad setting; log:\n%s", bin, p.LogTail(20))
	}
	if err := p.Wait(); err == nil {
		t.Fatalf("%s exited 0 with a bad setting; log:\n%s", bin, p.LogTail(20))
	}
	if log := p.LogTail(20); !strings.Contains(log, want) {
		t.Fatalf("%s's log does not say %q:\n%s", bin, want, log)
	}
}

// metricValue returns the value of the sample named (with its labels) series on addr/metrics,
// 0 when there is none.
func metricValue(t *testing.T, addr, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// statusOf returns the status of a GET of url.
func statusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
