package memlimit

import (
	"errors"
	"io/fs"
	"math"
	"runtime/debug"
	"testing"
)

func TestResolveMemoryLimit(t *testing.T) {
	cgroup := func(content string, err error) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if path != cgroupMemoryMax {
				t.Errorf("read %s, want %s", path, cgroupMemoryMax)
			}
			return []byte(content), err
		}
	}
	for _, tc := range []struct {
		name      string
		flag      string
		gomemlim  string
		readFile  func(string) ([]byte, error)
		want      int64
		wantError bool
	}{
		{"auto from the cgroup", "auto", "", cgroup("1073741824\n", nil), 1073741824 / 100 * 90, false},
		{"default is auto", "", "", cgroup("2000000000", nil), 2000000000 / 100 * 90, false},
		{"default honours GOMEMLIMIT", "", "512MiB", cgroup("2000000000", nil), 0, false},
		{"flag beats GOMEMLIMIT", "1GiB", "512MiB", cgroup("max", nil), 1 << 30, false},
		{"no cgroup limit", "auto", "", cgroup("max\n", nil), 0, false},
		{"no cgroup", "auto", "", cgroup("", fs.ErrNotExist), 0, false},
		{"none", "none", "512MiB", cgroup("2000000000", nil), math.MaxInt64, false},
		{"unreadable cgroup", "auto", "", cgroup("", errors.New("permission denied")), 0, true},
		{"garbage in the cgroup", "auto", "", cgroup("lots", nil), 0, true},
		{"bad size", "9 parsecs", "", cgroup("max", nil), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomemlim
				}
				return ""
			}
			got, err := resolveMemoryLimit(tc.flag, env, tc.readFile)
			if (err != nil) != tc.wantError || got.bytes != tc.want {
				t.Fatalf(
					"resolveMemoryLimit(%q) = %d (%s), %v; want %d, error %v",
					tc.flag,
					got.bytes,
					got.source,
					err,
					tc.want,
					tc.wantError,
				)
			}
		})
	}
}

func TestBodyBudgetDefault(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	debug.SetMemoryLimit(math.MaxInt64)
	if got := BodyBudget(0, 32<<20); got != defaultBodyBudget {
		t.Errorf("no memory limit: %d, want %d", got, defaultBodyBudget)
	}
	debug.SetMemoryLimit(2 << 30)
	if got := BodyBudget(0, 32<<20); got != 512<<20 {
		t.Errorf("2 GiB memory limit: %d, want a quarter, 512 MiB", got)
	}
	debug.SetMemoryLimit(64 << 20)
	if got := BodyBudget(0, 32<<20); got != 32<<20 {
		t.Errorf("64 MiB memory limit: %d, want one largest body, 32 MiB", got)
	}
	if got := BodyBudget(100<<20, 32<<20); got != 100<<20 {
		t.Errorf("configured: %d, want 100 MiB", got)
	}
}
