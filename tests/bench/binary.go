package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// GatewayBinary returns a cluster-gateway executable: from binDir when given (or
// SWITCHYARD_BIN_DIR), else freshly built from this workspace into a temporary directory that
// cleanup removes.
func GatewayBinary(binDir string) (path string, cleanup func(), err error) {
	if binDir == "" {
		binDir = os.Getenv("SWITCHYARD_BIN_DIR")
	}
	if binDir != "" {
		p, err := harness.FindBinary(binDir, "cluster-gateway")
		return p, func() {}, err
	}
	root, err := harness.WorkspaceRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "switchyard-bench-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cluster-gateway/cmd/cluster-gateway")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("bench: go build cluster-gateway: %w\n%s", err, out.String())
	}
	p, err := harness.FindBinary(dir, "cluster-gateway")
	return p, cleanup, err
}
