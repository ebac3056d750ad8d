package route

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"/chat", Chat},
		{"/chat/", Chat},
		{"/chatty", ""},
		{"/api/events", Chat},
		{"/api/eventsx", ""},
		{"/api/sessions", Chat},
		{"/api/sessions/abc/logs/messages", Chat},
		{"/api/sessions/abc/changes", Shadow},
		{"/api/sessions/abc/changes/x", Shadow},
		{"/api/sessions//changes", Chat},
		{"/api/session/abc/stash", Chat},
		{"/api/cli-sessions", Chat},
		{"/api/cli-sessions/claude/abc/messages", Chat},
		{"/api/cli-sessions/codex/abc/continue", Chat},
		{"/api/cli-sessionsx", ""},
		{"/api/app/provider-path/claude", Chat},
		{"/api/app/helpers/status", Shadow},
		{"/api/app/helpersx", Chat},
		{"/api/file", Shadow},
		{"/api/file/write", Shadow},
		{"/api/file/upload", Shadow},
		{"/api/files", Shadow},
		{"/api/file-raw", Shadow},
		{"/api/shadow/log", Shadow},
		{"/api/shadow-db/sql", Analytics},
		{"/api/shadow-dbx", ""},
		{"/ws/terminal", Terminal},
		{"/api/terminal/t1", Terminal},
		{"/api/terminals", Terminal},
		{"/api/exec", Terminal},
		{"/api/health/chat", Chat},
		{"/api/health/analytics", Analytics},
		{"/api/health", ""},
		{"/api/info", ""},
		{"/api/auth/revoke", ""},
		{"/", ""},
		{"", ""},
		{"/view", Shadow},
		{"/viewer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := Match(Table, tt.path); got != tt.want {
				t.Errorf("Match(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestEveryEntryReachable(t *testing.T) {
	// An entry shadowed by an earlier, broader one would never be used.
	for i, e := range Table {
		probe := ""
		for _, seg := range splitPattern(e.Pattern) {
			if seg == "*" {
				seg = "x"
			}
			probe += "/" + seg
		}
		for _, earlier := range Table[:i] {
			if matches(earlier.Pattern, probe) && earlier.Service != e.Service {
				t.Errorf("entry %q (%s) is shadowed by %q (%s)", e.Pattern, e.Service, earlier.Pattern, earlier.Service)
			}
		}
	}
}

func splitPattern(p string) []string { return strings.Split(strings.TrimPrefix(p, "/"), "/") }

func FuzzMatch(f *testing.F) {
	f.Add("/api/sessions/x/changes")
	f.Add("//")
	f.Fuzz(func(t *testing.T, p string) {
		s := Match(Table, p)
		if s != "" && (len(p) == 0 || p[0] != '/') {
			t.Errorf("non-absolute path %q routed to %s", p, s)
		}
	})
}
