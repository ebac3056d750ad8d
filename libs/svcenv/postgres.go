package svcenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/secretpaths"
)

// PostgreSQL variables, and the file in the data home where
// deploy/scripts/provision.sh writes them.
const (
	EnvDatabaseURL         = "DATABASE_URL"
	EnvReadonlyDatabaseURL = "READONLY_DATABASE_URL"
	PostgresEnvFile        = secretpaths.PostgresEnvFile
)

// ReadPostgresEnv reads <dataHome>/postgres.env: KEY=VALUE lines, with blank
// lines and lines starting with # ignored, and a value optionally in single
// or double quotes. A missing file is an error matching fs.ErrNotExist.
func ReadPostgresEnv(dataHome string) (map[string]string, error) {
	path := filepath.Join(dataHome, PostgresEnvFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("%s line %d: want KEY=VALUE", path, n)
		}
		vars[key] = unquote(strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return vars, nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// PostgresURL returns value (what the variable key was set to) when it is
// not empty, else key's value in <dataHome>/postgres.env. When neither has
// it, the error names both ways of providing it.
func PostgresURL(dataHome, key, value string) (string, error) {
	if value != "" {
		return value, nil
	}
	vars, err := ReadPostgresEnv(dataHome)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if v := vars[key]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s is not set and %s has no %s: set %s, or run deploy/scripts/provision.sh (make run does) to write it",
		key, filepath.Join(dataHome, PostgresEnvFile), key, key)
}

// LoadPostgresURL reads the PostgreSQL URL variable key (or key_FILE)
// through r. A value that is not a postgres:// URL is recorded in r as a
// problem, without repeating it: it may hold a password. An empty result
// means unset; PostgresURL then looks in the data home's postgres.env.
func LoadPostgresURL(r *envconf.Reader, key string) string {
	v := r.Secret(key)
	if v == "" {
		return ""
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		r.Fail("%s: want a URL such as postgres://user:password@127.0.0.1:5432/svc_code", key)
	}
	return v
}
