package app

import (
	"strings"
	"testing"
)

// TestLoadConfigExtraDirs: SHADOW_EXTRA_DIRS takes absolute paths only.
func TestLoadConfigExtraDirs(t *testing.T) {
	home := t.TempDir()
	env := func(extra string) func(string) string {
		return func(k string) string {
			return map[string]string{"SVC_CODE_HOME": home, EnvExtraDirs: extra}[k]
		}
	}
	cfg, err := LoadConfig(env("/srv/a:/srv/b"))
	if err != nil || cfg.ExtraDirs != "/srv/a:/srv/b" {
		t.Errorf("got %q, %v; want the list", cfg.ExtraDirs, err)
	}
	if _, err := LoadConfig(env("/srv/a:relative")); err == nil || !strings.Contains(err.Error(), `"relative" is not an absolute path`) {
		t.Errorf("a relative entry: got %v, want it refused", err)
	}
}
