// Command bench runs Tier 1's routing-quality benchmark for one scenario: per gateway policy an
// identical simulated fleet behind its own cluster-gateway, the same request sequence to each.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/tests/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
