// Package memlimit sets the Go runtime's soft memory limit from a --memory-limit value (a size,
// auto from the cgroup, none, or GOMEMLIMIT honoured) and sizes the in-flight body budget that
// follows from it. Both binaries use it, so the two flags mean the same on either tier.
package memlimit

import (
	"errors"
	"fmt"
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
	// heap (scheduling or routing, gossip, the router's embedded etcd, responses streaming)
	// needs the rest.
	bodyBudgetShare = 4
)

// Values of --memory-limit besides a size.
const (
	memoryLimitAuto = "auto"
	memoryLimitNone = "none"
)

// limit is a resolved --memory-limit: the bytes to set (0: leave the runtime's own, which
// GOMEMLIMIT set) and where they came from, for the log.
type limit struct {
	bytes  int64
	source string
}

// Check validates a --memory-limit value.
func Check(v string) error {
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
func resolveMemoryLimit(v string, getenv func(string) string, readFile func(string) ([]byte, error)) (limit, error) {
	switch v {
	case "":
		if g := getenv("GOMEMLIMIT"); g != "" {
			return limit{source: "GOMEMLIMIT"}, nil
		}
		return autoMemoryLimit(readFile)
	case memoryLimitAuto:
		return autoMemoryLimit(readFile)
	case memoryLimitNone:
		return limit{bytes: math.MaxInt64, source: "--memory-limit=none"}, nil
	}
	n, err := body.ParseSize(v)
	if err != nil {
		return limit{}, fmt.Errorf("--memory-limit: %w", err)
	}
	return limit{bytes: n, source: "--memory-limit"}, nil
}

// autoMemoryLimit is autoMemoryPercent of the cgroup's memory limit; none without a cgroup
// limit (the file is missing, or holds "max").
func autoMemoryLimit(readFile func(string) ([]byte, error)) (limit, error) {
	b, err := readFile(cgroupMemoryMax)
	if errors.Is(err, os.ErrNotExist) {
		return limit{source: "none (no cgroup memory limit)"}, nil
	}
	if err != nil {
		return limit{}, fmt.Errorf("--memory-limit=auto: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return limit{source: "none (no cgroup memory limit)"}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return limit{}, fmt.Errorf("--memory-limit=auto: %s holds %q", cgroupMemoryMax, s)
	}
	return limit{
		bytes:  n / 100 * autoMemoryPercent,
		source: fmt.Sprintf("%d%% of the cgroup limit (%d bytes)", autoMemoryPercent, n),
	}, nil
}

// Apply resolves a --memory-limit value, sets it as the Go runtime's soft memory limit, and
// returns the limit in force (math.MaxInt64: none) and where it came from, for the caller's log.
func Apply(v string, getenv func(string) string) (inForce int64, source string, err error) {
	l, err := resolveMemoryLimit(v, getenv, os.ReadFile)
	if err != nil {
		return 0, "", err
	}
	if l.bytes > 0 {
		debug.SetMemoryLimit(l.bytes)
	}
	return debug.SetMemoryLimit(-1), l.source, nil
}

// LogAttrs are the slog attributes that describe a limit Apply returned: "limit" ("none" or the
// bytes) and "source".
func LogAttrs(inForce int64, source string) []any {
	if inForce == math.MaxInt64 {
		return []any{"limit", "none", "source", source}
	}
	return []any{"limit_bytes", inForce, "source", source}
}

// BodyBudget is the in-flight body budget: configured bytes, or with 0 (auto) a quarter of the
// runtime's memory limit in force, else defaultBodyBudget; never below one largest body.
func BodyBudget(configured, maxBody int64) int64 {
	if configured > 0 {
		return configured
	}
	n := int64(defaultBodyBudget)
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		n = limit / bodyBudgetShare
	}
	return max(n, maxBody)
}

// SizeFlag is a flag.Value of bytes with an optional suffix (body.ParseSize), or "auto" for 0,
// stored in *P.
type SizeFlag struct{ P *int64 }

// String implements flag.Value.
func (f SizeFlag) String() string {
	if f.P == nil || *f.P == 0 {
		return memoryLimitAuto
	}
	return strconv.FormatInt(*f.P, 10)
}

// Set implements flag.Value.
func (f SizeFlag) Set(s string) error {
	if s == memoryLimitAuto {
		*f.P = 0
		return nil
	}
	n, err := body.ParseSize(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return errors.New("must be positive (or auto)")
	}
	*f.P = n
	return nil
}
