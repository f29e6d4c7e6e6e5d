package e2e

import (
	"fmt"
	"net"
	"testing"
)

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []any {
	t.Helper()
	out := make([]any, 0, n)
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
