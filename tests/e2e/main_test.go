// Package e2e runs Switchyard's real binaries together on loopback: simulated GPU servers,
// cluster gateways and global routers, and checks what a client and an operator see.
package e2e

import (
	"os"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(harness.Main(m, "e2e", true, &binDir)) }
