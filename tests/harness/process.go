// Package harness starts Switchyard's real binaries for the local stack and for end-to-end tests:
// it builds them once from this workspace, runs each as a supervised child process with its output
// in a log file, waits for its health endpoint, and stops it with SIGTERM (SIGKILL after a grace
// period). On Linux a child also gets SIGTERM when its parent dies, SIGKILL included, so a killed
// local stack or test binary leaves no process behind.
package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// Process is one supervised child: a binary started with flags, its output in a log file.
type Process struct {
	// Name labels the process in errors.
	Name string
	// Bin is the executable; Args its arguments.
	Bin  string
	Args []string
	// Health is a URL that answers 200 once the process is up ("" = none).
	Health string
	// LogPath receives the process's stdout and stderr.
	LogPath string
	// Tier orders shutdown in the local stack (higher tiers stop first).
	Tier int

	cmd *exec.Cmd
	// exited is closed once the process has exited; exitErr is its exit error.
	exited  chan struct{}
	exitErr error
}

// Start launches the process. It does not wait for health.
func (p *Process) Start() error {
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.Name, err)
	}
	p.cmd = exec.Command(p.Bin, p.Args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = childAttr()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start %s: %w", p.Name, p.Bin, err)
	}
	p.exited = make(chan struct{})
	go func() {
		err := p.cmd.Wait()
		logf.Close()
		p.exitErr = err
		close(p.exited)
	}()
	return nil
}

// WaitHealthy polls the health URL until it answers 200, the process exits, or timeout passes.
func (p *Process) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	if p.Health == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	err := poll.Wait(ctx, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Health, nil)
		resp, err := client.Do(req)
		if err != nil {
			return p.unlessExited("it was ready", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return p.unlessExited("it was ready", fmt.Errorf("GET %s: %s", p.Health, resp.Status))
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s not ready after %v; see %s", p.Name, timeout, p.LogPath)
	}
	return err
}

// unlessExited returns err, the reason the process is not there yet, while the process runs;
// once it has exited, an error made by poll.Stop that says it exited before what.
func (p *Process) unlessExited(what string, err error) error {
	select {
	case <-p.exited:
		return poll.Stop(
			fmt.Errorf("%s exited before %s (%v); see %s, which ends:\n%s", p.Name, what, p.exitErr, p.LogPath, p.LogTail(20)),
		)
	default:
		return err
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then kills its group. It
// returns an error when the process did not exit cleanly (status 0).
func (p *Process) Stop(grace time.Duration) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return exitErr(p.Name, p.exitErr)
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err := p.Wait()
		return fmt.Errorf("%s did not stop within %v and was killed (%v)", p.Name, grace, err)
	}
}

func exitErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// LogTail returns the last n lines of the process's log ("" when it cannot be read), so that an
// error names its cause where only the test output is kept.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Pid is the process's id (0 before Start).
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait blocks until the process has exited and returns its exit error (nil for status 0).
func (p *Process) Wait() error {
	<-p.exited
	return p.exitErr
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return errors.New("harness: process not started")
	}
	return p.cmd.Process.Signal(sig)
}

// FindBinary returns the path of a Switchyard binary: in binDir when given, else beside the
// running executable, else on PATH.
func FindBinary(binDir, name string) (string, error) {
	var dirs []string
	if binDir != "" {
		dirs = append(dirs, binDir)
	}
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("binary %s not found in %v or PATH (build it with `make run` or `go build`)", name, dirs)
}
