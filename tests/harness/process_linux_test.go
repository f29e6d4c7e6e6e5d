package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// roleEnv makes this test binary play the parent or the child of TestChildDiesWithParent.
const roleEnv = "SWITCHYARD_HARNESS_TEST_ROLE"

// TestChildDiesWithParent runs this test binary as a parent that starts a child Process, kills the
// parent with SIGKILL (no chance to stop anything) and checks that the child is gone too.
func TestChildDiesWithParent(t *testing.T) {
	switch os.Getenv(roleEnv) {
	case "child":
		time.Sleep(time.Minute)
		return
	case "parent":
		playParent(t)
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	parent.Env = append(os.Environ(), roleEnv+"=parent", "SWITCHYARD_HARNESS_TEST_DIR="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	pid := 0
	lines := bufio.NewScanner(out)
	for pid == 0 && lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "child pid "); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		t.Fatalf("the parent never reported its child (%v)", lines.Err())
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running before its parent is killed", pid)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !poll.Within(20*time.Second, func() bool { return !alive(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("child %d still runs 20 s after its parent was killed", pid)
	}
}

// playParent starts the child through Process, reports its pid and waits to be killed.
func playParent(t *testing.T) {
	t.Setenv(roleEnv, "child")
	p := &Process{
		Name:    "child",
		Bin:     os.Args[0],
		Args:    []string{"-test.run=^TestChildDiesWithParent$"},
		LogPath: filepath.Join(os.Getenv("SWITCHYARD_HARNESS_TEST_DIR"), "child.log"),
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child pid %d\n", p.Pid())
	time.Sleep(time.Minute)
}

// alive reports whether pid runs (a zombie waiting to be reaped does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
