package app

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// askProvider is an agent.Provider whose every turn asks AskUserQuestion
// and ends once answered; it records the decisions it got.
type askProvider struct {
	events *agent.Stream
	mu     sync.Mutex
	got    []agent.PermissionDecision
}

const askInput = `{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"red"},{"label":"blue"}],"multiSelect":false}]}`

func (p *askProvider) Name() string                { return "agent-sdk" }
func (p *askProvider) Caps() agent.Caps            { return agent.Caps{} }
func (p *askProvider) Events() *agent.Stream       { return p.events }
func (p *askProvider) Start(context.Context) error { return nil }
func (p *askProvider) SessionID() string           { return "" }
func (p *askProvider) Send(_ context.Context, _ agent.Turn) error {
	p.events.Push(agent.TurnStarted{})
	p.events.Push(agent.PermissionRequest{RequestID: "ask-1", ToolName: "AskUserQuestion", Input: json.RawMessage(askInput)})
	return nil
}

func (p *askProvider) Interrupt(context.Context) (agent.InterruptOutcome, error) {
	return agent.InterruptIdle, nil
}

func (p *askProvider) SetPermissionMode(context.Context, string) (agent.Applied, error) {
	return agent.AppliedNextTurn, nil
}

func (p *askProvider) RespondPermission(_ context.Context, _ string, d agent.PermissionDecision) error {
	p.mu.Lock()
	p.got = append(p.got, d)
	p.mu.Unlock()
	p.events.Push(agent.Message{Type: "result", Raw: json.RawMessage(`{"type":"result","subtype":"success"}`)})
	p.events.Push(agent.TurnEnded{Subtype: "success"})
	return nil
}

func (p *askProvider) Close() error {
	p.events.Push(agent.ProcessExited{Cause: agent.ExitClosed})
	p.events.Close()
	return nil
}

func TestChatToolAnswer(t *testing.T) {
	prov := &askProvider{events: agent.NewStream()}
	c := startChatWith(t, notFound, nil, func(agent.Options) agent.Provider { return prov })
	a, conn := c.connect()
	b, _ := c.join(conn.str("session_id"), -1)
	a.send(map[string]any{"type": "user_message", "content": "ask me"})
	req := b.until("permission_request", isType("permission_request"))
	if f := req[len(req)-1]; f.str("tool_name") != "AskUserQuestion" || f.str("request_id") != "ask-1" {
		t.Fatalf("permission_request = %v", f)
	}
	b.send(map[string]any{"type": "tool_answer", "request_id": "ask-1", "answers": map[string]string{"Which color?": "blue"}, "answered_by": "tab B"})
	for name, w := range map[string]*wsClient{"A": a, "B": b} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("behavior") != "allow" || f.str("request_id") != "ask-1" || f.str("answered_by") != "tab B" {
			t.Errorf("tab %s: permission_resolved = %v", name, f)
		}
	}
	prov.mu.Lock()
	got := prov.got
	prov.mu.Unlock()
	if len(got) != 1 || got[0].Behavior != agent.Allow {
		t.Fatalf("decisions %+v", got)
	}
	var in map[string]any
	if err := json.Unmarshal(got[0].UpdatedInput, &in); err != nil {
		t.Fatal(err)
	}
	answers, _ := in["answers"].(map[string]any)
	if answers["Which color?"] != "blue" || in["questions"] == nil {
		t.Errorf("updated input %s: want the questions and answers", got[0].UpdatedInput)
	}

	// Not pending any more: ok false; malformed: error frame.
	a.send(map[string]any{"type": "tool_answer", "request_id": "ask-1", "answers": map[string]string{}})
	res := a.until("permission_resolved", isType("permission_resolved"))
	if f := res[len(res)-1]; f["ok"] != false {
		t.Errorf("second answer: %v, want ok false", f)
	}
	a.send(map[string]any{"type": "tool_answer", "request_id": "ask-1"})
	a.until("error", isType("error"))
}
