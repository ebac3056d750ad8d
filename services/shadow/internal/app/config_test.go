package app

import (
	"testing"
)

// TestLoadConfigDefaults covers shadow's own variables; svcenv's tests cover
// the shared ones, and svchttptest's contract (cmd/shadow) the problems
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
		{"Addr", cfg.Addr, "127.0.0.1:8773"},
		{"DataHome", cfg.DataHome, home},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestLoadConfigJournal(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		m["SVC_CODE_HOME"] = t.TempDir()
		return func(k string) string { return m[k] }
	}
	cfg, err := LoadConfig(env(map[string]string{}))
	if err != nil || cfg.MaxFileMB != 50 || cfg.Consumer == "" || cfg.Consumer == "shadow-" {
		t.Errorf("defaults: MaxFileMB %d, Consumer %q, %v", cfg.MaxFileMB, cfg.Consumer, err)
	}
	cfg, err = LoadConfig(env(map[string]string{EnvMaxFileMB: "0", EnvConsumer: "c1"}))
	if err != nil || cfg.MaxFileMB != 0 || cfg.Consumer != "c1" {
		t.Errorf("set: MaxFileMB %d, Consumer %q, %v", cfg.MaxFileMB, cfg.Consumer, err)
	}
	for _, bad := range []string{"-1", "lots"} {
		if _, err := LoadConfig(env(map[string]string{EnvMaxFileMB: bad})); err == nil {
			t.Errorf("%s=%s accepted", EnvMaxFileMB, bad)
		}
	}
}
