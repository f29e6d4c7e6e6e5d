package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// Main parses flags, builds the logger and runs the router until ctx ends.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := ParseFlags(args, stderr)
	if err != nil {
		return err
	}
	log, err := NewLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	limit, source, err := memlimit.Apply(cfg.MemoryLimit, os.Getenv)
	if err != nil {
		return err
	}
	log.Info("memory limit", memlimit.LogAttrs(limit, source)...)
	return Run(ctx, cfg, log)
}

// NewLogger returns a slog logger writing text or JSON at the given level.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
