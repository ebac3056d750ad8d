// Package logging builds the one *slog.Logger each binary injects
// everywhere: JSON in containers, text on a terminal, tagged with the
// service name.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a logger writing to w in format "text" or "json" at the given
// level ("debug", "info", "warn", "error"; empty means info).
func New(w io.Writer, service, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if level != "" {
		if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
			return nil, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("LOG_FORMAT=%q: want text or json", format)
	}
	return slog.New(h).With("service", service), nil
}
