// Command scale measures the gossip pool and the router at internet scale: for each pool size N
// it starts N simulated cluster gateways and a few routers as real gossip nodes (memberlist,
// AES-GCM, the summary codec and broadcast budget of the gossip module) on 127.0.0.1 in one
// process, publishes generated load, and reports bytes per node, how long a change takes to
// reach every router, memory per node and summary ages; it then runs the router's at-scale Go
// benchmarks (decision time with N clusters × M models, CPU per routed request, throughput,
// failover), fits the measured curves, extrapolates them to the target size, and writes a
// Markdown table, JSON and PNG plots. `make bench-scale` runs it; docs/scale.md explains it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
