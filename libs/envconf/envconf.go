// Package envconf reads typed settings from the environment. Each service
// parses its variables once, in app.LoadConfig, through a Reader that
// collects every problem so they can be reported together.
package envconf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through getenv and remembers every invalid one.
type Reader struct {
	getenv func(string) string
	errs   []error
}

// New returns a Reader over getenv (os.Getenv in main, a map in tests).
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Err joins every problem met so far, or is nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// Getenv exposes the underlying lookup.
func (r *Reader) Getenv(key string) string { return r.getenv(key) }

// String returns the variable, or def when it is unset or empty.
func (r *Reader) String(key, def string) string {
	if v := strings.TrimSpace(r.getenv(key)); v != "" {
		return v
	}
	return def
}

// Secret returns KEY, or the trimmed contents of the file named by KEY_FILE.
// Setting both is an error.
func (r *Reader) Secret(key string) string {
	v, file := r.getenv(key), r.getenv(key+"_FILE")
	switch {
	case v != "" && file != "":
		r.errs = append(r.errs, fmt.Errorf("%s and %s_FILE are both set; use one", key, key))
		return ""
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s_FILE: %w", key, err))
			return ""
		}
		return strings.TrimRight(string(b), "\r\n")
	}
	return v
}

// Int returns the variable as an integer, or def when unset.
func (r *Reader) Int(key string, def int) int {
	v := strings.TrimSpace(r.getenv(key))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not an integer", key, v))
		return def
	}
	return n
}

// Bool returns the variable as a boolean (1, t, true, on, yes; 0, f,
// false, off, no; any case), or def when unset.
func (r *Reader) Bool(key string, def bool) bool {
	raw := r.getenv(key)
	switch v := strings.ToLower(strings.TrimSpace(raw)); v {
	case "":
		return def
	case "1", "t", "true", "on", "yes":
		return true
	case "0", "f", "false", "off", "no":
		return false
	}
	r.errs = append(r.errs, fmt.Errorf("%s=%q: not a boolean such as on or off", key, raw))
	return def
}

// Duration returns the variable as a Go duration ("5s", "1m"), or def.
func (r *Reader) Duration(key string, def time.Duration) time.Duration {
	v := strings.TrimSpace(r.getenv(key))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not a duration such as 5s or 1m", key, v))
		return def
	}
	return d
}

// Fail records a problem found while validating a value.
func (r *Reader) Fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}
