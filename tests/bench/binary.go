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
	return binary(binDir, "cluster-gateway", "./cluster-gateway/cmd/cluster-gateway")
}

// RouterBinary returns a global-router executable, found or built like GatewayBinary.
func RouterBinary(binDir string) (path string, cleanup func(), err error) {
	return binary(binDir, "global-router", "./global-router/cmd/global-router")
}

func binary(binDir, name, pkg string) (path string, cleanup func(), err error) {
	if binDir == "" {
		binDir = os.Getenv("SWITCHYARD_BIN_DIR")
	}
	if binDir != "" {
		p, err := harness.FindBinary(binDir, name)
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
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), pkg)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("bench: go build %s: %w\n%s", name, err, out.String())
	}
	p, err := harness.FindBinary(dir, name)
	return p, cleanup, err
}
