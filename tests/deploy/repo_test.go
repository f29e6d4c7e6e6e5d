package deploy_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// repoRoot is the workspace root: the directory of go.work.
func repoRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() { rootDir, rootErr = harness.WorkspaceRoot() })
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return rootDir
}

// repoPath joins parts under the workspace root.
func repoPath(t *testing.T, parts ...string) string {
	t.Helper()
	return filepath.Join(append([]string{repoRoot(t)}, parts...)...)
}

// readFile reads a file or fails the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
