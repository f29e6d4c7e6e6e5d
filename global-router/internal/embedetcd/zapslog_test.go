package embedetcd

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestSlogCore(t *testing.T) {
	tests := []struct {
		name string
		log  func(*zap.Logger)
		want string // "" = nothing logged
	}{
		{"info dropped", func(l *zap.Logger) { l.Info("hello") }, ""},
		{
			"warn kept",
			func(l *zap.Logger) { l.Warn("slow apply", zap.Int("ms", 7)) },
			`level=WARN msg="slow apply" component=etcd ms=7`,
		},
		{
			"with fields",
			func(l *zap.Logger) { l.With(zap.String("member", "m0")).Error("lost leader") },
			`level=ERROR msg="lost leader" component=etcd member=m0`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))
			tt.log(NewZapLogger(logger.With("component", "etcd"), slog.LevelWarn))
			got := strings.TrimSpace(buf.String())
			if got != tt.want {
				t.Fatalf("logged %q, want %q", got, tt.want)
			}
		})
	}
}
