// Package adversarial attacks Switchyard's real binaries on loopback the way a hostile client,
// a rogue gossip member or a broken upstream would, and checks each defence holds: the attack is
// refused or contained, it is counted in a bounded metric, and everyone else is still served.
// docs/security.md lists each threat with its defence and the test here that proves it.
package adversarial

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(harness.Main(m, "adversarial", false, &binDir)) }

// newWorld returns a set of real processes for one attack, stopped when the test ends.
func newWorld(t *testing.T) *harness.World { return harness.NewWorld(t, binDir) }

// TestWorldServes is the suite's control: the world every attack starts from serves a request.
func TestWorldServes(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-a", "us-east-1", []string{w.Pod("h100").Listen})
	body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`
	resp, err := http.Post("http://"+gw.Listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion through the gateway: %d", resp.StatusCode)
	}
}
