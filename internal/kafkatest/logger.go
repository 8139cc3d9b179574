package kafkatest

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kfake"
)

// slogAdapter forwards kfake's printf-style log lines to a slog.Logger.
// The message stays static so log queries can match it; kfake's formatted
// text goes under the "line" key.
type slogAdapter struct{ l *slog.Logger }

var _ kfake.Logger = slogAdapter{}

// Logf implements kfake.Logger. kfake calls it for every line at every
// level and leaves filtering to the logger, so we check Enabled before
// formatting anything.
func (a slogAdapter) Logf(level kfake.LogLevel, format string, args ...any) {
	var lvl slog.Level
	switch level {
	case kfake.LogLevelNone:
		return
	case kfake.LogLevelError:
		lvl = slog.LevelError
	case kfake.LogLevelWarn:
		lvl = slog.LevelWarn
	case kfake.LogLevelInfo:
		lvl = slog.LevelInfo
	default:
		lvl = slog.LevelDebug
	}
	ctx := context.Background()
	if !a.l.Enabled(ctx, lvl) {
		return
	}
	a.l.Log(ctx, lvl, "kafkatest: broker", "line", fmt.Sprintf(format, args...))
}
