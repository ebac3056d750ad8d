package app

import "testing"

// A host profile gives the gateway its own config file and Redis prefix, so
// that two profiles never share credentials or epochs.
func TestLoadConfigProfile(t *testing.T) {
	tests := []struct {
		name                   string
		env                    map[string]string
		wantConfig, wantPrefix string
	}{
		{"default", map[string]string{"HOME": "/h"}, "/h/.config/svc-code/config.yaml", "svc:"},
		{"profile", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work"}, "/h/.config/svc-code/profiles/work/config.yaml", "svc-work:"},
		{"explicit", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work", "SVC_CONFIG": "/c.yaml", "REDIS_PREFIX": "p:"}, "/c.yaml", "p:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ConfigPath != tt.wantConfig || cfg.RedisPrefix != tt.wantPrefix {
				t.Errorf("got config %q prefix %q, want %q %q", cfg.ConfigPath, cfg.RedisPrefix, tt.wantConfig, tt.wantPrefix)
			}
		})
	}
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "a/b"}[k]
	}); err == nil {
		t.Error("LoadConfig with profile a/b: want an error")
	}
}
