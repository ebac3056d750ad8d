package providers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// memSettings is Settings in memory.
type memSettings map[string][]byte

func (m memSettings) Setting(_ context.Context, key string, v any) (bool, error) {
	b, ok := m[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

func (m memSettings) SetSetting(_ context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	m[key] = b
	return err
}

func (m memSettings) DeleteSetting(_ context.Context, key string) error {
	delete(m, key)
	return nil
}

func TestDefaultsValidate(t *testing.T) {
	claude, _ := Lookup(AgentSDK)
	cx, _ := Lookup(AppServer)
	for _, tc := range []struct {
		name string
		p    Provider
		d    Defaults
		ok   bool
	}{
		{"empty", claude, Defaults{}, true},
		{"all codex", cx, Defaults{Model: "gpt-5", PermissionMode: "plan", ApprovalPolicy: "never", Sandbox: "read-only"}, true},
		{"model with spaces", claude, Defaults{Model: "gpt 5"}, false},
		{"model too long", claude, Defaults{Model: string(make([]byte, 300))}, false},
		{"bad mode", claude, Defaults{PermissionMode: "dontAsk"}, false},
		{"policy for claude", claude, Defaults{ApprovalPolicy: "never"}, false},
		{"sandbox for claude", claude, Defaults{Sandbox: "read-only"}, false},
		{"stale policy spelling", cx, Defaults{ApprovalPolicy: "unlessTrusted"}, false},
		{"stale sandbox spelling", cx, Defaults{Sandbox: "workspaceWrite"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.d.Validate(tc.p); (err == nil) != tc.ok {
				t.Errorf("Validate(%+v) = %v, want ok %v", tc.d, err, tc.ok)
			}
		})
	}
}

func TestFillNewSession(t *testing.T) {
	ctx := context.Background()
	st := memSettings{}
	n := store.NewSession{Cwd: "/tmp"}
	if err := FillNewSession(ctx, st, &n); err != nil || n.Provider != AgentSDK || n.Model != "" || n.PermissionMode != "" {
		t.Fatalf("no settings: %+v, %v", n, err)
	}
	cx, _ := Lookup(AppServer)
	_ = st.SetSetting(ctx, KeyDefaultProvider, AppServer)
	_ = st.SetSetting(ctx, DefaultsKey(cx), Defaults{Model: "gpt-5", PermissionMode: "acceptEdits"})
	n = store.NewSession{Cwd: "/tmp"}
	if err := FillNewSession(ctx, st, &n); err != nil || n.Provider != AppServer || n.Model != "gpt-5" || n.PermissionMode != "acceptEdits" {
		t.Errorf("with settings: %+v, %v", n, err)
	}
	n = store.NewSession{Cwd: "/tmp", Provider: AppServer, PermissionMode: "plan"}
	if err := FillNewSession(ctx, st, &n); err != nil || n.PermissionMode != "plan" || n.Model != "gpt-5" {
		t.Errorf("explicit mode kept: %+v, %v", n, err)
	}
	if err := FillNewSession(ctx, st, &store.NewSession{Provider: "nope"}); err == nil {
		t.Error("unknown provider accepted")
	}
	_ = st.SetSetting(ctx, KeyDefaultProvider, "gone-provider")
	if p, err := DefaultProvider(ctx, st); err != nil || p.Name != Default {
		t.Errorf("stale default provider: %v, %v", p.Name, err)
	}
}

func TestPricesOverride(t *testing.T) {
	mine := codex.Price{InputPerMTok: 3}
	ps := Prices([]Model{{ID: "gpt-5", Price: &mine}, {ID: "free"}})
	if ps["gpt-5"] != mine || ps["o3"] != codex.DefaultPrices["o3"] {
		t.Errorf("prices %v", ps)
	}
	if _, ok := ps["free"]; ok {
		t.Error("a model without a price got one")
	}
}

func TestNewAgent(t *testing.T) {
	ctx := context.Background()
	st := memSettings{}
	exe := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cx, _ := Lookup(AppServer)
	notFound := func(string) (string, error) { return "", os.ErrNotExist }
	if _, err := NewAgent(ctx, st, cx, agent.Options{}, notFound); err == nil {
		t.Error("no executable: no error")
	}
	_ = st.SetSetting(ctx, PathKey(cx), exe)
	p, err := NewAgent(ctx, st, cx, agent.Options{}, notFound)
	if err != nil || p.Name() != AppServer || p.Caps().LiveControls {
		t.Fatalf("NewAgent = %v, %v", p, err)
	}
	_ = p.Close()
}

func TestAuthSources(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	cx, _ := Lookup(AppServer)
	env := map[string]string{"CODEX_API_KEY": "k"}
	got := AuthSources(cx, func(k string) string { return env[k] }, home, false)
	present := map[string]bool{}
	for _, s := range got {
		present[s.Name] = s.Present
	}
	if present["OPENAI_API_KEY"] || !present["CODEX_API_KEY"] || !present[filepath.Join(home, ".codex", "auth.json")] || present[AuthKey(cx)] {
		t.Errorf("sources %+v", got)
	}
}
