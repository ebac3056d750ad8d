package svcenv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/envconf"
)

func writeEnvFile(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PostgresEnvFile), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadPostgresEnv(t *testing.T) {
	dir := writeEnvFile(t, `# Written by deploy/scripts/provision.sh
DATABASE_URL=postgres://svc_code:pw@127.0.0.1:5432/svc_code?sslmode=disable

READONLY_DATABASE_URL = "postgres://ro:x=y@h/db"
QUOTED='single'
`)
	got, err := ReadPostgresEnv(dir)
	if err != nil {
		t.Fatalf("ReadPostgresEnv: %v", err)
	}
	want := map[string]string{
		"DATABASE_URL":          "postgres://svc_code:pw@127.0.0.1:5432/svc_code?sslmode=disable",
		"READONLY_DATABASE_URL": "postgres://ro:x=y@h/db",
		"QUOTED":                "single",
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestReadPostgresEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		want    string
		missing bool
	}{
		{"missing file", t.TempDir(), PostgresEnvFile, true},
		{"line without =", writeEnvFile(t, "DATABASE_URL=x\njunk\n"), "line 2", false},
		{"empty key", writeEnvFile(t, "=x\n"), "line 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPostgresEnv(tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.missing {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.missing)
			}
		})
	}
}

func TestPostgresURL(t *testing.T) {
	withFile := writeEnvFile(t, "DATABASE_URL=postgres://from-file/db\n")
	tests := []struct {
		name    string
		dir     string
		value   string
		want    string
		wantErr []string
	}{
		{"variable wins", withFile, "postgres://from-env/db", "postgres://from-env/db", nil},
		{"from the file", withFile, "", "postgres://from-file/db", nil},
		{"no file", t.TempDir(), "", "", []string{"DATABASE_URL is not set", PostgresEnvFile, "provision.sh"}},
		{"file without the key", writeEnvFile(t, "OTHER=1\n"), "", "", []string{"DATABASE_URL", "provision.sh"}},
		{"bad file", writeEnvFile(t, "junk\n"), "", "", []string{"line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PostgresURL(tt.dir, EnvDatabaseURL, tt.value)
			if tt.wantErr == nil {
				if err != nil || got != tt.want {
					t.Errorf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", got)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadPostgresURL(t *testing.T) {
	tests := []struct {
		name, value string
		wantErr     bool
	}{
		{"unset", "", false},
		{"postgres scheme", "postgres://u:hunter2@db:5432/svc_code", false},
		{"postgresql scheme", "postgresql://u:hunter2@db/svc_code", false},
		{"other scheme", "mysql://root:hunter2@db/x", true},
		{"no scheme", "ro:hunter2@db", true},
		{"not a URL", "postgres://u:hunter2@db:port\x7f/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := envconf.New(mapenv(map[string]string{EnvDatabaseURL: tt.value}))
			got := LoadPostgresURL(r, EnvDatabaseURL)
			if got != tt.value {
				t.Errorf("got %q, want %q", got, tt.value)
			}
			err := r.Err()
			if (err != nil) != tt.wantErr {
				t.Fatalf("problems: %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil && (!strings.Contains(err.Error(), EnvDatabaseURL) || strings.Contains(err.Error(), "hunter2")) {
				t.Errorf("error %q: want it to name %s and not repeat the password", err, EnvDatabaseURL)
			}
		})
	}
}
