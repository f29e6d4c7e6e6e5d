// Command modelsim is a simulated vLLM-compatible model server (or a fleet of them) for measuring
// routing without GPUs. Run it with --help for its flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/tests/modelsim/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
