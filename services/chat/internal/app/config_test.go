package app

import (
	"testing"
	"time"
)

// TestLoadConfigDefaults covers chat's own variables; svcenv's tests cover
// the shared ones, and svchttptest's contract (cmd/chat) the problems
// LoadConfig reports.
func TestLoadConfigDefaults(t *testing.T) {
	home := t.TempDir()
	cfg, err := LoadConfig(func(k string) string { return map[string]string{"SVC_CODE_HOME": home}[k] })
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"Addr", cfg.Addr, "127.0.0.1:8771"},
		{"DatabaseURL", cfg.DatabaseURL, ""},
		{"DataHome", cfg.DataHome, home},
		{"OwnerTTL", cfg.OwnerTTL, DefaultOwnerTTL},
		{"Heartbeat", cfg.Heartbeat, 10 * time.Second},
		{"SyncAgentLog", cfg.SyncAgentLog, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestLoadConfigOwnerTTL(t *testing.T) {
	env := map[string]string{"SVC_CODE_HOME": t.TempDir(), EnvOwnerTTL: "2s"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || cfg.OwnerTTL != 2*time.Second {
		t.Errorf("CHAT_OWNER_TTL=2s: %v, %v", cfg.OwnerTTL, err)
	}
	env[EnvOwnerTTL] = "10ms"
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil {
		t.Errorf("CHAT_OWNER_TTL=10ms: no error")
	}
}

func TestLoadConfigHeartbeat(t *testing.T) {
	env := map[string]string{"SVC_CODE_HOME": t.TempDir(), EnvHeartbeat: "3s"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || cfg.Heartbeat != 3*time.Second {
		t.Errorf("CHAT_HEARTBEAT=3s: %v, %v", cfg.Heartbeat, err)
	}
	env[EnvHeartbeat] = "1ms"
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil {
		t.Errorf("CHAT_HEARTBEAT=1ms: no error")
	}
}

func TestLoadConfigSyncAgentLog(t *testing.T) {
	env := map[string]string{"SVC_CODE_HOME": t.TempDir(), EnvSyncAgentLog: "on"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || !cfg.SyncAgentLog {
		t.Errorf("CHAT_SYNC_AGENT_LOG=on: %v, %v", cfg.SyncAgentLog, err)
	}
	env[EnvSyncAgentLog] = "sometimes"
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil {
		t.Errorf("CHAT_SYNC_AGENT_LOG=sometimes: no error")
	}
}
