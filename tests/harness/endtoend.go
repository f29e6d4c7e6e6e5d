package harness

import (
	"os"
	"testing"
)

// EndToEndEnv is the environment variable that keeps end-to-end tests out of a run: set to 0
// (`make test` sets it), EndToEnd skips them. Unset or any other value, they run, so plain
// `go test` runs every test; `make test-e2e` runs the end-to-end ones.
const EndToEndEnv = "SWITCHYARD_E2E"

// EndToEndSkipped reports whether end-to-end tests are to be skipped (EndToEndEnv is "0").
func EndToEndSkipped() bool { return os.Getenv(EndToEndEnv) == "0" }

// EndToEnd marks t as an end-to-end test, one that starts many processes or runs a long scenario,
// and skips it when EndToEndEnv is "0". Call it first in the test.
func EndToEnd(t testing.TB) {
	t.Helper()
	if EndToEndSkipped() {
		t.Skip("end-to-end test: skipped with " + EndToEndEnv + "=0 (make test); make test-e2e runs it")
	}
}
