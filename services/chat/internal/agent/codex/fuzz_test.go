package codex

import (
	"log/slog"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// FuzzHandleLine: no stdout line, however malformed, crashes the router,
// and every non-empty line is reported.
func FuzzHandleLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","result":{}}`, `{"method":"turn/completed","params":{"turn":{"id":"x","status":"completed"}}}`,
		`{"method":"item/commandExecution/requestApproval","id":0,"params":{"command":"ls"}}`,
		`{"method":"item/started","params":{"item":{"type":"fileChange","changes":[{"kind":"add"}]}}}`,
		`{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"last":{"inputTokens":"x"}}}}`,
		`not json`, `{"id":null}`, `[1,2]`, `{"method":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(_ *testing.T, line []byte) {
		p := New(Config{Options: agent.Options{Log: slog.New(slog.DiscardHandler)}})
		pr := &process{p: p, num: 1, pending: map[string]pendingCall{}, perms: map[string]*permEntry{}}
		pr.cur = newTurn(nil)
		pr.handleLine(line)
		pr.notification(&wireMsg{Method: "turn/completed"})
		p.events.Close()
	})
}
