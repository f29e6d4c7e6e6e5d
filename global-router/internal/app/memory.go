package app

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// Memory limits (--memory-limit, --max-inflight-body-bytes).
const (
	// cgroupMemoryMax is the cgroup v2 file holding the container's memory limit ("max": none).
	cgroupMemoryMax = "/sys/fs/cgroup/memory.max"
	// autoMemoryPercent is the share of the cgroup's limit --memory-limit=auto sets: the rest
	// leaves room for memory the Go runtime does not govern (stacks of goroutines blocked in
	// syscalls, the binary, the kernel's socket buffers charged to the cgroup).
	autoMemoryPercent = 90
	// defaultBodyBudget is the in-flight body budget without a memory limit.
	defaultBodyBudget = 256 << 20
	// bodyBudgetShare is the share of the memory limit the automatic body budget takes (1/4):
	// bodies are held for a request's whole life (retries resend them), and the rest of the
	// heap (routing, gossip, the embedded etcd, responses streaming) needs the rest.
	bodyBudgetShare = 4
)

// Values of --memory-limit besides a size.
const (
	memoryLimitAuto = "auto"
	memoryLimitNone = "none"
)

// memoryLimit is a resolved --memory-limit: the bytes to set (0: leave the runtime's own, which
// GOMEMLIMIT set) and where they came from, for the log.
type memoryLimit struct {
	bytes  int64
	source string
}

// checkMemoryLimit validates a --memory-limit value.
func checkMemoryLimit(v string) error {
	switch v {
	case "", memoryLimitAuto, memoryLimitNone:
		return nil
	}
	n, err := body.ParseSize(v)
	if err == nil && n <= 0 {
		err = errors.New("must be positive")
	}
	return err
}

// resolveMemoryLimit turns a --memory-limit value into the limit to set: "" honours an existing
// GOMEMLIMIT, else is auto; auto is autoMemoryPercent of the cgroup's memory.max (read with
// readFile), or no limit outside a memory-limited cgroup; none lifts any limit; a size is used
// as given.
func resolveMemoryLimit(v string, getenv func(string) string, readFile func(string) ([]byte, error)) (memoryLimit, error) {
	switch v {
	case "":
		if g := getenv("GOMEMLIMIT"); g != "" {
			return memoryLimit{source: "GOMEMLIMIT"}, nil
		}
		return autoMemoryLimit(readFile)
	case memoryLimitAuto:
		return autoMemoryLimit(readFile)
	case memoryLimitNone:
		return memoryLimit{bytes: math.MaxInt64, source: "--memory-limit=none"}, nil
	}
	n, err := body.ParseSize(v)
	if err != nil {
		return memoryLimit{}, fmt.Errorf("--memory-limit: %w", err)
	}
	return memoryLimit{bytes: n, source: "--memory-limit"}, nil
}

// autoMemoryLimit is autoMemoryPercent of the cgroup's memory limit; none without a cgroup
// limit (the file is missing, or holds "max").
func autoMemoryLimit(readFile func(string) ([]byte, error)) (memoryLimit, error) {
	b, err := readFile(cgroupMemoryMax)
	if errors.Is(err, os.ErrNotExist) {
		return memoryLimit{source: "none (no cgroup memory limit)"}, nil
	}
	if err != nil {
		return memoryLimit{}, fmt.Errorf("--memory-limit=auto: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return memoryLimit{source: "none (no cgroup memory limit)"}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return memoryLimit{}, fmt.Errorf("--memory-limit=auto: %s holds %q", cgroupMemoryMax, s)
	}
	return memoryLimit{bytes: n / 100 * autoMemoryPercent, source: fmt.Sprintf("%d%% of the cgroup limit (%d bytes)", autoMemoryPercent, n)}, nil
}

// applyMemoryLimit resolves --memory-limit, sets it as the Go runtime's soft memory limit and
// logs the limit in force.
func applyMemoryLimit(v string, getenv func(string) string, log *slog.Logger) error {
	l, err := resolveMemoryLimit(v, getenv, os.ReadFile)
	if err != nil {
		return err
	}
	if l.bytes > 0 {
		debug.SetMemoryLimit(l.bytes)
	}
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		log.Info("memory limit", "limit", "none", "source", l.source)
		return nil
	}
	log.Info("memory limit", "limit_bytes", limit, "source", l.source)
	return nil
}

// bodyBudget is the in-flight body budget: configured bytes, or with 0 (auto) a quarter of the
// runtime's memory limit in force, else defaultBodyBudget; never below one largest body.
func bodyBudget(configured, maxBody int64) int64 {
	if configured > 0 {
		return configured
	}
	n := int64(defaultBodyBudget)
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		n = limit / bodyBudgetShare
	}
	return max(n, maxBody)
}

// sizeFlag is a flag of bytes with an optional suffix (body.ParseSize), or "auto" for 0.
type sizeFlag struct{ p *int64 }

func (f sizeFlag) String() string {
	if f.p == nil || *f.p == 0 {
		return memoryLimitAuto
	}
	return strconv.FormatInt(*f.p, 10)
}

func (f sizeFlag) Set(s string) error {
	if s == memoryLimitAuto {
		*f.p = 0
		return nil
	}
	n, err := body.ParseSize(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return errors.New("must be positive (or auto)")
	}
	*f.p = n
	return nil
}
