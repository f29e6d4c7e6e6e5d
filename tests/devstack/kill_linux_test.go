package devstack_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/devstack"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// roleEnv makes this test binary play devstack itself (its flags in argsEnv) for
// TestChildrenDieWithDevstack.
const (
	roleEnv = "SWITCHYARD_DEVSTACK_TEST_ROLE"
	argsEnv = "SWITCHYARD_DEVSTACK_TEST_ARGS"
)

// TestChildrenDieWithDevstack runs the local stack (devstack's own code, in this test binary
// re-executed) over one simulated pod, a gateway and a router, kills it with SIGKILL once it is
// up (no chance to stop anything), and checks that every process it started is gone: each gets
// a parent-death signal from the kernel.
func TestChildrenDieWithDevstack(t *testing.T) {
	if os.Getenv(roleEnv) == "devstack" {
		playDevstack()
		return
	}
	if testing.Short() {
		t.Skip("starts the real binaries")
	}
	binDir, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(harness.Cleanup)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "devstack.yaml")
	ports := make([]string, 2)
	for i := range ports {
		if ports[i], err = harness.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`model: test-model
timeScale: 0.2
regions:
  - name: us-east-1
    router: {listen: %s, admin: %s}
    clusters:
      - name: kill-a
        pods: [{profile: h100, count: 1}]
`, ports[0], ports[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	stack := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithDevstack$")
	stack.Env = append(os.Environ(), roleEnv+"=devstack", argsEnv+"="+strings.Join([]string{"--config=" + cfg,
		"--data-dir=" + filepath.Join(dir, "data"), "--bin-dir=" + binDir, "--ready-timeout=2m"}, "\n"))
	out, err := stack.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stack.Stderr = os.Stderr
	if err := stack.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stack.Process.Kill(); _ = stack.Wait() }()
	lines := bufio.NewScanner(out)
	up := false
	for !up && lines.Scan() {
		up = strings.Contains(lines.Text(), "Press Ctrl-C to stop everything.")
	}
	if !up {
		t.Fatalf("the stack never came up (%v)", lines.Err())
	}
	kids := children(stack.Process.Pid)
	if len(kids) < 3 {
		t.Fatalf("the stack runs %d processes (%v), want the pod, the gateway and the router", len(kids), kids)
	}
	if err := stack.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = stack.Wait()
	if !poll.Within(60*time.Second, func() bool { return len(running(kids)) == 0 }) {
		left := running(kids)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v of the stack still run 60 s after it was killed", left)
	}
}

// playDevstack runs the stack with the flags of argsEnv until it is killed.
func playDevstack() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := devstack.Main(ctx, strings.Split(os.Getenv(argsEnv), "\n"), os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// children returns the pids of ppid's child processes, from /proc.
func children(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, ok := parentOf(pid); ok && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf reads a process's parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// running returns the pids that still run (a zombie waiting to be reaped does not count).
func running(pids []int) []int {
	var out []int
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}
