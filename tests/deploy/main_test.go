package deploy_test

import (
	"os"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}
