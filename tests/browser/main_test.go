// Package browser drives Switchyard's web pages in a real headless browser (Chromium, through
// the DevTools protocol with chromedp) against the real binaries: the router's capacity map.
// A test skips, saying so, only when no Chromium binary can be found.
package browser

import (
	"os"
	"os/exec"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(harness.Main(m, "browser", false, &binDir)) }

// chromiumEnv names a Chromium (or Chrome) binary to use instead of the ones looked up on PATH.
const chromiumEnv = "SWITCHYARD_CHROMIUM"

// chromium returns the path of a Chromium binary, or skips the test when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
		"headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary found: install Debian's chromium (apt-get install chromium; `make test` and " +
		".ci/run do when it is missing) or set " + chromiumEnv)
	return ""
}
