package events

import (
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

func TestDigest(t *testing.T) {
	base := protocol.SessionSummary{Session: protocol.Session{SessionID: "S", Title: "t", UpdatedAt: time.Unix(1, 0), LastLine: 3}}
	same := base
	same.UpdatedAt, same.LastLine = time.Unix(99, 0), 40 // every message changes them
	if digest(base) != digest(same) {
		t.Error("updated_at and last_line change the digest: every message would resend a snapshot")
	}
	for name, change := range map[string]func(*protocol.SessionSummary){
		"title":    func(s *protocol.SessionSummary) { s.Title = "u" },
		"running":  func(s *protocol.SessionSummary) { s.AgentRunning = true },
		"pending":  func(s *protocol.SessionSummary) { s.PendingPermissions = 1 },
		"queued":   func(s *protocol.SessionSummary) { s.Queued = 2 },
		"favorite": func(s *protocol.SessionSummary) { s.IsFavorite = true },
		"turns":    func(s *protocol.SessionSummary) { s.Turns = 1 },
		"cost":     func(s *protocol.SessionSummary) { s.CostUSD = 0.01 },
		"archived": func(s *protocol.SessionSummary) { s.Archived = true },
		"mode":     func(s *protocol.SessionSummary) { s.PermissionMode = "plan" },
	} {
		t.Run(name, func(t *testing.T) {
			s := base
			change(&s)
			if digest(s) == digest(base) {
				t.Errorf("a change of %s leaves the digest as it was: a lost wake-up would never be repaired", name)
			}
		})
	}
}

func TestViewEqual(t *testing.T) {
	a := view{sessions: map[string]string{"S": "x"}, pending: map[string]string{"r1": "S"}}
	tests := []struct {
		name string
		b    view
		want bool
	}{
		{"same", view{sessions: map[string]string{"S": "x"}, pending: map[string]string{"r1": "S"}}, true},
		{"other digest", view{sessions: map[string]string{"S": "y"}, pending: map[string]string{"r1": "S"}}, false},
		{"request gone", view{sessions: map[string]string{"S": "x"}}, false},
		{"extra session", view{sessions: map[string]string{"S": "x", "T": "x"}, pending: map[string]string{"r1": "S"}}, false},
		{"empty", view{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.equal(tt.b); got != tt.want {
				t.Errorf("equal = %t, want %t", got, tt.want)
			}
		})
	}
}
