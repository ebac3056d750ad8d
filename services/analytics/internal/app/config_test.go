package app

import (
	"strings"
	"testing"
)

// TestLoadConfigDefaults covers analytics's own variables; svcenv's tests cover
// the shared ones, and svchttptest's contract (cmd/analytics) the problems
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
		{"Addr", cfg.Addr, "127.0.0.1:8774"},
		{"DatabaseURL", cfg.DatabaseURL, ""},
		{"ReadonlyDatabaseURL", cfg.ReadonlyDatabaseURL, ""},
		{"DataHome", cfg.DataHome, home},
		{"Consumer", cfg.Consumer, defaultConsumer()},
		{"SQLMaxResponseMB", cfg.SQLMaxResponseMB, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestLoadConfigConsumer(t *testing.T) {
	home := t.TempDir()
	for _, tt := range []struct {
		value   string
		wantErr bool
	}{
		{"analytics-1", false},
		{strings.Repeat("x", 201), true},
	} {
		env := map[string]string{"SVC_CODE_HOME": home, EnvConsumer: tt.value}
		cfg, err := LoadConfig(func(k string) string { return env[k] })
		if (err != nil) != tt.wantErr {
			t.Errorf("%s=%q: err %v, want error %v", EnvConsumer, tt.value, err, tt.wantErr)
		}
		if err == nil && cfg.Consumer != tt.value {
			t.Errorf("Consumer = %q, want %q", cfg.Consumer, tt.value)
		}
	}
}

func TestLoadConfigSQLMaxResponse(t *testing.T) {
	home := t.TempDir()
	for _, tt := range []struct {
		value   string
		want    int64 // sqlapi.Config.MaxResponseBytes
		wantErr bool
	}{
		{"64", 64 << 20, false},
		{"0", -1, false},
		{"-1", 0, true},
		{"lots", 0, true},
	} {
		env := map[string]string{"SVC_CODE_HOME": home, EnvSQLMaxResponseMB: tt.value}
		cfg, err := LoadConfig(func(k string) string { return env[k] })
		if (err != nil) != tt.wantErr {
			t.Errorf("%s=%q: err %v, want error %v", EnvSQLMaxResponseMB, tt.value, err, tt.wantErr)
		}
		if err == nil && maxResponseBytes(cfg.SQLMaxResponseMB) != tt.want {
			t.Errorf("%s=%q: bound %d, want %d", EnvSQLMaxResponseMB, tt.value, maxResponseBytes(cfg.SQLMaxResponseMB), tt.want)
		}
	}
}
