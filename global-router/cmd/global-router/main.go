// Command global-router is Switchyard's Tier 2: one or more per region, behind a regional DNS
// name. See the project README and `global-router --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/global-router/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Main(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, app.ErrHelp) {
		fmt.Fprintln(os.Stderr, "global-router:", err)
		os.Exit(1)
	}
}
