package secretpaths

import (
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/datahome"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestForListsEverySecret(t *testing.T) {
	vars := map[string]string{
		"HOME":            "/home/u",
		"XDG_CONFIG_HOME": "/home/u/xdg",
		// a known variable, not in environ's names
		"SVC_INTERNAL_SECRET_FILE": "/run/secrets/internal",
		"SOME_TOOL_KEY_FILE":       "/etc/svc/../svc/tool",
		"X_FILE":                   "relative",
	}
	environ := []string{"HOME=/home/u", "SOME_TOOL_KEY_FILE=ignored, read through getenv", "X_FILE=relative"}
	s := For(env(vars), environ)
	tests := []struct {
		path string
		want bool
	}{
		{"/home/u/.config/svc-code", true},
		{"/home/u/.config/svc-code/config.yaml", true},
		{"/home/u/.config/svc-code/other", true},
		{"/home/u/xdg/svc-code/config.yaml", true},
		{"/home/u/.config", false},
		{"/home/u/.config/svc-code2", false},
		{"/home/u/.svc-code", true},
		{"/home/u/.svc-code/internal.key", true},
		{"/home/u/.svc-code/postgres.env", true},
		{"/home/u/.svc-code/logs/gateway.log", true},
		{"/home/u/.svc-code/projects/0123/shadow-git/config", true},
		{"/home/u/.svc-code/some-future-secret", true},
		{"/home/u/.svc-code/uploads", false},
		{"/home/u/.svc-code/uploads/s1/a.png", false},
		{"/run/secrets/internal", true},
		{"/etc/svc/tool", true},
		{"relative", false},
		{"/home/u/proj/main.go", false},
		{"/home/u", false},
	}
	for _, tt := range tests {
		if got := s.Private(tt.path); got != tt.want {
			t.Errorf("Private(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// The paths here are the ones the writers use: a writer that moves its
// file must move it here too, or this fails.
func TestForAgreesWithTheWriters(t *testing.T) {
	home := t.TempDir()
	cases := []map[string]string{
		{"HOME": home},
		{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "x")},
		{"HOME": home, "SVC_CONFIG": filepath.Join(home, "elsewhere", "c.yaml"), "SVC_CODE_HOME": filepath.Join(home, "data")},
	}
	for _, vars := range cases {
		s := For(env(vars), nil)
		cfg, err := configfile.DefaultPath(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		dh, err := datahome.Dir(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{cfg, cfg + ".lock", filepath.Join(dh, InternalKeyFile), filepath.Join(dh, PostgresEnvFile)} {
			if !s.Private(p) {
				t.Errorf("env %v: %s is not private", vars, p)
			}
		}
		if !s.Private(filepath.Join(dh, "internal.key")) || !s.Private(filepath.Join(dh, "postgres.env")) {
			t.Errorf("env %v: the data home's key files are not private", vars)
		}
	}
}

// A data home that holds the home directory cannot be private whole; its
// secrets, logs and journals still are.
func TestForDataHomeAboveHome(t *testing.T) {
	for _, dh := range []string{"/home/u", "/"} {
		s := For(env(map[string]string{"HOME": "/home/u", "SVC_CODE_HOME": dh}), nil)
		for p, want := range map[string]bool{
			filepath.Join(dh, "internal.key"):        true,
			filepath.Join(dh, "postgres.env"):        true,
			filepath.Join(dh, "logs", "gateway.log"): true,
			filepath.Join(dh, "projects", "x"):       true,
			"/home/u/proj/a.go":                      false,
			"/home/u/.config/svc-code/config.yaml":   true,
		} {
			if got := s.Private(p); got != want {
				t.Errorf("data home %s: Private(%q) = %v, want %v", dh, p, got, want)
			}
		}
	}
}

// A host profile's file routes must not reach the default instance's or
// another profile's secrets, which all live below ~/.svc-code.
func TestForProfileKeepsOtherInstancesPrivate(t *testing.T) {
	s := For(env(map[string]string{"HOME": "/home/u", "SVC_CODE_PROFILE": "work"}), nil)
	tests := []struct {
		path string
		want bool
	}{
		{"/home/u/.svc-code/profiles/work/internal.key", true},
		{"/home/u/.svc-code/profiles/work/uploads/s1/a.png", false},
		{"/home/u/.svc-code/internal.key", true},
		{"/home/u/.svc-code/postgres.env", true},
		{"/home/u/.svc-code/profiles/other/postgres.env", true},
		{"/home/u/.svc-code/profiles/other/redis/password", true},
		{"/home/u/.config/svc-code/profiles/other/config.yaml", true},
		{"/home/u/proj/main.go", false},
	}
	for _, tt := range tests {
		if got := s.Private(tt.path); got != tt.want {
			t.Errorf("Private(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
