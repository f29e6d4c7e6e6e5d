package gossip

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// slogWriter turns memberlist's "[LEVEL] memberlist: message" log lines into slog records.
type slogWriter struct {
	logger *slog.Logger
}

// newMemberlistLogger returns a *log.Logger for memberlist that writes into logger.
func newMemberlistLogger(logger *slog.Logger) *log.Logger {
	return log.New(&slogWriter{logger: logger}, "", 0)
}

func (w *slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, l := range []struct {
		tag   string
		level slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}} {
		if bytes.HasPrefix(line, []byte(l.tag)) {
			level, line = l.level, bytes.TrimSpace(line[len(l.tag):])
			break
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	if w.logger.Enabled(context.Background(), level) {
		w.logger.Log(context.Background(), level, "memberlist", "detail", string(line))
	}
	return len(p), nil
}
