// Package route is the gateway's routing table: which backend service owns
// which path. One table serves HTTP and WebSocket alike.
package route

import "strings"

// Service names the backends.
const (
	Chat      = "chat"
	Terminal  = "terminal"
	Shadow    = "shadow"
	Analytics = "analytics"
)

// Services lists every backend, in a stable order.
var Services = []string{Chat, Terminal, Shadow, Analytics}

// Entry maps a path pattern to a service. A pattern is a list of path
// segments; "*" matches any one segment; a pattern matches a path equal to
// it or below it (segment-wise, so /api/file does not match /api/files).
type Entry struct {
	Pattern string
	Service string
}

// Table is the routing table of svc-code. More specific patterns come
// first; Match returns the first entry that matches.
var Table = []Entry{
	// Specific entries that sit below another service's prefix.
	{"/api/sessions/*/changes", Shadow},
	{"/api/app/helpers", Shadow},

	{"/api/health/chat", Chat},
	{"/api/health/terminal", Terminal},
	{"/api/health/shadow", Shadow},
	{"/api/health/analytics", Analytics},

	{"/chat", Chat},
	{"/api/events", Chat},
	{"/api/sessions", Chat},
	{"/api/session", Chat},
	{"/api/active-sessions", Chat},
	{"/api/providers", Chat},
	{"/api/app", Chat},
	{"/api/drafts", Chat},
	{"/api/favorites", Chat},
	{"/api/push", Chat},
	{"/api/welcome", Chat},
	{"/api/tasks", Chat},
	{"/api/commands", Chat},
	{"/api/agents", Chat},
	{"/api/plugins", Chat},
	{"/api/skills", Chat},
	{"/api/upload-image", Chat},
	{"/api/upload-file", Chat},

	{"/ws/terminal", Terminal},
	{"/api/terminals", Terminal},
	{"/api/terminal", Terminal},
	{"/api/exec", Terminal},

	{"/api/shadow", Shadow},
	{"/api/git", Shadow},
	{"/api/files", Shadow},
	{"/api/file", Shadow},
	{"/api/file-raw", Shadow},
	{"/api/search", Shadow},
	{"/api/project", Shadow},
	{"/api/browser", Shadow},
	{"/view", Shadow},

	{"/api/shadow-db", Analytics},
	{"/api/turns", Analytics},
	{"/api/costs", Analytics},
	{"/api/prompts", Analytics},
}

// Match returns the service owning path, or "" when no entry matches.
func Match(table []Entry, path string) string {
	for _, e := range table {
		if matches(e.Pattern, path) {
			return e.Service
		}
	}
	return ""
}

func matches(pattern, path string) bool {
	for {
		pattern = strings.TrimPrefix(pattern, "/")
		if pattern == "" {
			// Pattern consumed: the path must end or continue at a segment
			// boundary, which the loop below guarantees.
			return true
		}
		if !strings.HasPrefix(path, "/") {
			return false
		}
		path = path[1:]
		pseg, prest, _ := strings.Cut(pattern, "/")
		seg, rest, hasRest := strings.Cut(path, "/")
		if pseg != "*" && pseg != seg || seg == "" && pseg == "*" {
			return false
		}
		pattern = prest
		if hasRest {
			path = "/" + rest
		} else {
			path = ""
		}
	}
}
