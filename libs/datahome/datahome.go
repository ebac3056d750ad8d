// Package datahome resolves svc-code's data home: SVC_CODE_HOME when set,
// else ~/.svc-code/profiles/NAME for the host profile SVC_CODE_PROFILE=NAME,
// else ~/.svc-code. Every service and helper goes through it, so relocating
// the data (a container's /data, a host profile) moves everything at once.
package datahome

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/svc-code/svc-code/libs/profile"
)

// EnvVar names the variable that relocates the data home.
const EnvVar = "SVC_CODE_HOME"

// Dir returns the data home for the given environment. It does not create it.
// SVC_CODE_HOME wins over a profile's default; a profile name that is not a
// plain name is an error either way.
func Dir(getenv func(string) string) (string, error) {
	name, err := profile.Name(getenv)
	if err != nil {
		return "", err
	}
	if d := getenv(EnvVar); d != "" {
		if !filepath.IsAbs(d) {
			abs, err := filepath.Abs(d)
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", EnvVar, err)
			}
			d = abs
		}
		return filepath.Clean(d), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("neither SVC_CODE_HOME nor HOME is set")
		}
		home = h
	}
	if name != "" {
		return filepath.Join(home, ".svc-code", "profiles", name), nil
	}
	return filepath.Join(home, ".svc-code"), nil
}

// Ensure returns the data home, creating it with mode 0700 when missing.
func Ensure(getenv func(string) string) (string, error) {
	d, err := Dir(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("create data home %s: %w", d, err)
	}
	return d, nil
}
