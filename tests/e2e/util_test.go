package e2e

import (
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// freePorts returns n loopback ports picked the way the harness picks its children's ports.
func freePorts(t *testing.T, n int) []any {
	t.Helper()
	out := make([]any, 0, n)
	for range n {
		addr, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		out = append(out, p)
	}
	return out
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
