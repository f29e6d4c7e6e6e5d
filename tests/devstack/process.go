package devstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one supervised child: a Switchyard binary started with flags, its output in a log file.
type process struct {
	tier    int
	name    string
	bin     string
	args    []string
	health  string // URL that answers 200 once the process is up ("" = none)
	logPath string
	cmd     *exec.Cmd
	done    chan error
}

// start launches the process. It does not wait for health.
func (p *process) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.name, err)
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.bin, err)
	}
	p.done = make(chan error, 1)
	go func() {
		err := p.cmd.Wait()
		logf.Close()
		p.done <- err
		close(p.done)
	}()
	return nil
}

// waitHealthy polls the health URL until it answers 200, the process exits, or timeout passes.
func (p *process) waitHealthy(ctx context.Context, timeout time.Duration) error {
	if p.health == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.health, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); see %s", p.name, err, p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v; see %s", p.name, timeout, p.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits up to grace for the process to exit, then kills its group.
func (p *process) stop(grace time.Duration) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return exitErr(p.name, err)
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %v and was killed", p.name, grace)
	}
}

func exitErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// freePort returns a loopback address with a port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// findBinary returns the path of a Switchyard binary: in binDir when given, else beside the
// running executable, else on PATH.
func findBinary(binDir, name string) (string, error) {
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
