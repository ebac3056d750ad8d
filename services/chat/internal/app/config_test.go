package app

import (
	"strings"
	"testing"
	"time"
)

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
		{"RedisURL", cfg.RedisURL, "redis://127.0.0.1:6379/0"},
		{"RedisPrefix", cfg.RedisPrefix, "svc:"},
		{"ShutdownTimeout", cfg.ShutdownTimeout, 10 * time.Second},
		{"BodyLimit", cfg.BodyLimit, 32 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	env := map[string]string{
		"SVC_CODE_HOME": t.TempDir(),
		"CHAT_ADDR":     "8771",
		"DATABASE_URL":  "mysql://root:hunter2@db/x",
		"BODY_LIMIT_MB": "lots",
		"LOG_FORMAT":    "xml",
	}
	_, err := LoadConfig(func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("LoadConfig accepted bad values")
	}
	for _, want := range []string{"CHAT_ADDR", "DATABASE_URL", "BODY_LIMIT_MB", "LOG_FORMAT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q repeats the database password", err)
	}
}
