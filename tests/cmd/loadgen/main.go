// Command loadgen sends a workload to one or more OpenAI-compatible targets and reports TTFT, ITL
// and end-to-end latency percentiles side by side. See docs/loadgen.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/tests/loadgen/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
