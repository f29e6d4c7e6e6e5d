package devstack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
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
		fmt.Fprintf(stderr, "Usage: devstack [--config=FILE] [--data-dir=DIR] [--bin-dir=DIR]\n\nRuns the local Switchyard stack until interrupted.\n\n")
		fs.PrintDefaults()
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
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

// applyEnv sets each flag from SWITCHYARD_<FLAG> (dashes as underscores) when that is set;
// command-line flags parsed afterwards win.
func applyEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		key := "SWITCHYARD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", key, e)
			}
		}
	})
	return err
}
