package codex_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Deny with Interrupt is Codex's "cancel": the turn ends interrupted, by
// the protocol, and the process stays warm for the next turn.
func TestDenyWithInterruptCancelsTheTurn(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RUN_SHELL")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	pid := p.PID()
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Deny, Interrupt: true}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	if end, _ := find[agent.TurnEnded](evs); !end.Interrupted || end.TerminalReason != "interrupted" {
		t.Errorf("TurnEnded %+v, want interrupted", end)
	}
	send(t, p, "hi")
	evs = collect(t, p, "turn end", isTurnEnded)
	if _, respawned := find[agent.ProcessStarted](evs); respawned || p.PID() != pid {
		t.Errorf("cancel restarted the process: %v", kinds(evs))
	}
}

// The availableDecisions' acceptWithExecpolicyAmendment becomes a
// suggestion; picking it sends that decision with its amendment, and the
// command is not asked again.
func TestExecpolicyAmendmentSuggestion(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RUN_SHELL")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if len(req.Suggestions) != 2 {
		t.Fatalf("suggestions %s, want acceptForSession and the amendment", req.Suggestions)
	}
	var s struct {
		Type      string   `json:"type"`
		Amendment []string `json:"execpolicy_amendment"`
	}
	if err := json.Unmarshal(req.Suggestions[1], &s); err != nil || s.Type != "acceptWithExecpolicyAmendment" || len(s.Amendment) != 3 || s.Amendment[0] != "/bin/bash" {
		t.Fatalf("suggestion %s (%v)", req.Suggestions[1], err)
	}
	one := 1
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, SuggestionIndex: &one}); err != nil {
		t.Fatal(err)
	}
	collect(t, p, "turn end", isTurnEnded)
	send(t, p, "RUN_SHELL")
	if _, asked := find[agent.PermissionRequest](collect(t, p, "turn end", isTurnEnded)); asked {
		t.Error("asked again after the amendment was accepted")
	}
}
