// Command oracle computes the routing benchmarks' oracle baseline: every request of a workload sent
// to the pod that gives it the earliest first token, simulated offline on modelsim's virtual
// clock. It prints TTFT percentiles and per-pod shares beside simulated round robin. See
// docs/benchmarks.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
