package body

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes ParseSize accepts, longest first so that "MiB" is not read as
// "B": binary (KiB and Kubernetes' Ki), decimal (KB and Kubernetes' K or k) and bytes (B).
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"B", 1},
}

// ParseSize parses a byte count as the binaries' size flags are written: a non-negative integer
// with an optional unit, binary (KiB, MiB, GiB, TiB, as GOMEMLIMIT writes them, or Kubernetes'
// Ki, Mi, Gi, Ti), decimal (KB, MB, GB, TB, or Kubernetes' K, M, G, T) or B, e.g. "268435456",
// "256MiB", "1Gi", "500M".
func ParseSize(s string) (int64, error) {
	num, unit := s, int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = n, u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	switch {
	case err != nil || num == "" || n < 0:
		return 0, fmt.Errorf(
			"body: size %q: want a non-negative integer with an optional unit (KiB, MiB, GiB, Ki, Mi, Gi, KB, MB, GB, B)",
			s,
		)
	case n > math.MaxInt64/unit:
		return 0, errors.New("body: size " + strconv.Quote(s) + " overflows 64 bits")
	}
	return n * unit, nil
}
