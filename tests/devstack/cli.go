package devstack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

// Main parses devstack's flags (also from SWITCHYARD_<FLAG> environment variables), loads the
// stack file and runs the stack until ctx ends.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "deploy/local/devstack.yaml", "stack layout file")
	opt := Options{Out: stdout}
	fs.StringVar(&opt.DataDir, "data-dir", ".devstack", "directory for logs, fleet files and the admin token")
	fs.StringVar(&opt.BinDir, "bin-dir", "", "directory of the Switchyard binaries (default: beside devstack, then PATH)")
	fs.DurationVar(&opt.ReadyTimeout, "ready-timeout", 60*time.Second, "how long to wait for each component to be ready")
	fs.DurationVar(&opt.StopGrace, "stop-grace", 15*time.Second, "how long each component may take to stop cleanly")
	fs.Usage = func() {
		fmt.Fprintf(
			stderr,
			"Usage: devstack [--config=FILE] [--data-dir=DIR] [--bin-dir=DIR]\n\nRuns the local Switchyard stack until interrupted.\n\n",
		)
		fs.PrintDefaults()
	}
	if _, err := flagenv.Parse(fs, args, flagenv.Options{EnvPrefix: flagenv.Prefix}); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := LoadConfig(*config)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, opt)
}
