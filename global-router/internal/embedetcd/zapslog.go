package embedetcd

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewZapLogger returns a zap logger that writes entries at level min and above to logger, for
// etcd's client (clientv3.Config.Logger), which otherwise logs to stderr on its own.
func NewZapLogger(logger *slog.Logger, min slog.Level) *zap.Logger {
	return zap.New(newSlogCore(logger, min))
}

// slogCore is a zapcore.Core that writes etcd's zap logs to a slog.Logger. Once muted (while the
// member shuts down, when etcd reports its closed listeners as errors) it drops everything.
type slogCore struct {
	logger *slog.Logger
	min    zapcore.Level
	attrs  []slog.Attr
	muted  *atomic.Bool
}

var _ zapcore.Core = (*slogCore)(nil)

func newSlogCore(logger *slog.Logger, min slog.Level) *slogCore {
	return &slogCore{logger: logger, min: zapLevel(min), muted: new(atomic.Bool)}
}

// Enabled implements zapcore.LevelEnabler.
func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.min && !c.muted.Load() }

// With returns a core that adds fields to every entry.
func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{logger: c.logger, min: c.min, attrs: append(slices.Clip(c.attrs), toAttrs(fields)...), muted: c.muted}
}

// Check adds the core to ce when the entry's level is enabled.
func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write logs one entry.
func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	attrs := append(slices.Clip(c.attrs), toAttrs(fields)...)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	c.logger.LogAttrs(context.Background(), slogLevel(e.Level), e.Message, attrs...)
	return nil
}

// Sync implements zapcore.Core; slog handlers do not buffer.
func (c *slogCore) Sync() error { return nil }

func toAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	return attrs
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	default:
		return zapcore.DebugLevel
	}
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
