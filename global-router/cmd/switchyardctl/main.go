// Command switchyardctl is the command-line client of the global router's admin API. Run
// "switchyardctl --help" for its commands and flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
