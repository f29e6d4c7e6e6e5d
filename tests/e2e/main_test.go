// Package e2e runs Switchyard's real binaries together on loopback: simulated GPU servers,
// cluster gateways and global routers, and checks what a client and an operator see.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		return 0
	}
	if harness.EndToEndSkipped() {
		fmt.Println("e2e: skipped with " + harness.EndToEndEnv + "=0")
		return 0
	}
	dir, err := harness.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer harness.Cleanup()
	binDir = dir
	return m.Run()
}
