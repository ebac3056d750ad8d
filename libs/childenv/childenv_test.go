package childenv

import (
	"slices"
	"strings"
	"testing"
)

func TestDenied(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		// The reproduction: make test's URLs reached every shell.
		{"TEST_DATABASE_URL", true},
		{"TEST_REDIS_URL", true},
		{"TEST_ANYTHING", true},
		{"DATABASE_URL", true},
		{"DATABASE_URL_FILE", true},
		{"READONLY_DATABASE_URL", true},
		{"READONLY_DATABASE_URL_FILE", true},
		{"PROVISION_DATABASE_URL", true},
		{"MYAPP_DATABASE_URL", true},
		{"REDIS_URL", true},
		{"REDIS_URL_FILE", true},
		{"REDIS_PASSWORD", true},
		{"REDIS_PASSWORD_FILE", true},
		{"REDIS_PREFIX", true},
		{"CACHE_REDIS_URL_RO", true},
		{"SVC_INTERNAL_SECRET", true},
		{"SVC_INTERNAL_SECRET_FILE", true},
		{"SVC_INTERNAL_KEY", true},
		{"SVC_CODE_PASSWORD", true},
		{"SVC_CODE_PASSWORD_FILE", true},
		{"SVC_ADDR", true},
		{"CHAT_URL", true},
		{"TERMINAL_SHELL", true},
		{"ANALYTICS_CONSUMER", true},
		// What a shell and the helpers need.
		{"PATH", false},
		{"HOME", false},
		{"LANG", false},
		{"LC_ALL", false},
		{"TERM", false},
		{"SHELL", false},
		{"USER", false},
		{"SVC_CODE_HOME", false},
		{"SVC_CONFIG", false},
		{"SVC_TOKEN", false},
		{"XDG_CONFIG_HOME", false},
		{"CLAUDE_CONFIG_DIR", false},
		{"CODEX_HOME", false},
		{"ANTHROPIC_API_KEY", false},
		{"SHADOW_MAX_FILE_MB", false},
		{"SSL_CERT_FILE", false},
		{"HISTFILE", false},
		{"_FILE", false},
		{"MY_TEST_FLAG", false},
		{"DATABASE", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Denied(tt.name); got != tt.want {
				t.Errorf("Denied(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestKeptAreNotDenied(t *testing.T) {
	for _, name := range Kept {
		if Denied(name) {
			t.Errorf("%s is in Kept and denied", name)
		}
	}
}

func TestFilter(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "TEST_DATABASE_URL=postgres://postgres@h/postgres", "HOME=/home/me",
		"SVC_INTERNAL_SECRET=s3cret", "REDIS_URL=redis://h", "LANG=C.UTF-8", "SVC_CODE_PASSWORD=pw",
		"READONLY_DATABASE_URL_FILE=/run/ro", "MY_VAR=a=b", "noequals", "DATABASE_URL=",
	}
	got := Filter(env)
	want := []string{"PATH=/usr/bin", "HOME=/home/me", "LANG=C.UTF-8", "MY_VAR=a=b", "noequals"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter = %q, want %q", got, want)
	}
}

func FuzzDenied(f *testing.F) {
	for _, s := range []string{"TEST_X", "PATH", "A_FILE", "REDIS_URL_FILE_FILE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if strings.Contains(name, "=") {
			return // not a name
		}
		d := Denied(name)
		// X_FILE follows X.
		if d && !Denied(name+"_FILE") {
			t.Errorf("%q is denied but %q is not", name, name+"_FILE")
		}
		got := Filter([]string{name + "=v"})
		if d != (len(got) == 0) {
			t.Errorf("Filter and Denied disagree on %q", name)
		}
	})
}
