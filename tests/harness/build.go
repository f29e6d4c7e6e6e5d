package harness

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Binaries are the packages of every Switchyard binary, relative to the workspace root.
var Binaries = []string{
	"./cluster-gateway/cmd/cluster-gateway",
	"./global-router/cmd/global-router",
	"./global-router/cmd/switchyardctl",
	"./tests/cmd/modelsim",
	"./tests/cmd/loadgen",
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Build compiles every binary once per test process into a temporary directory and returns it.
// The directory is removed by Cleanup. Set SWITCHYARD_BIN_DIR to use prebuilt binaries instead.
func Build() (string, error) {
	buildOnce.Do(func() {
		if dir := os.Getenv("SWITCHYARD_BIN_DIR"); dir != "" {
			buildDir = dir
			return
		}
		root, err := WorkspaceRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "switchyard-bin-")
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, Binaries...)...)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("harness: go build: %w\n%s", err, out.String())
			return
		}
		buildDir = dir
	})
	return buildDir, buildErr
}

// Cleanup removes the binaries Build made (not a SWITCHYARD_BIN_DIR), and the etcd binary
// World.Etcd built. Call it from TestMain.
func Cleanup() {
	if buildDir != "" && os.Getenv("SWITCHYARD_BIN_DIR") == "" {
		_ = os.RemoveAll(buildDir)
	}
	if etcdDir != "" {
		_ = os.RemoveAll(etcdDir)
	}
}

// WorkspaceRoot returns the directory of the go.work file this code runs in.
func WorkspaceRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("harness: go env GOWORK: %w", err)
	}
	w := strings.TrimSpace(string(out))
	if w == "" || w == "off" {
		return "", fmt.Errorf("harness: not inside the Switchyard Go workspace")
	}
	return filepath.Dir(w), nil
}

// Main runs the tests of a suite that starts the real binaries: it builds them (see Build), puts
// their directory in *binDir, runs the tests and removes the build. In -short mode, and with
// endToEnd and SWITCHYARD_E2E=0, it runs nothing. Call it from TestMain as
// os.Exit(harness.Main(m, "suite", endToEnd, &binDir)).
func Main(m *testing.M, suite string, endToEnd bool, binDir *string) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println(suite + ": skipped in -short mode")
		return 0
	}
	if endToEnd && EndToEndSkipped() {
		fmt.Println(suite + ": skipped with " + EndToEndEnv + "=0")
		return 0
	}
	dir, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer Cleanup()
	*binDir = dir
	return m.Run()
}
