// Command cluster-gateway is Switchyard's Tier 1: the per-cluster endpoint picker and
// OpenAI-compatible proxy. See docs/gateway.md for flags and behaviour.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-gateway:", err)
		os.Exit(1)
	}
}
