package app

import (
	"fmt"
	"os"
	"testing"
)

func TestLoadConfigFiles(t *testing.T) {
	env := map[string]string{"SVC_CODE_HOME": t.TempDir(), "HOME": "/home/me"}
	getenv := func(k string) string { return env[k] }
	cfg, err := LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Files
	wantTasks := fmt.Sprintf("[/tmp/claude-%d /tmp/claude]", os.Getuid())
	if f.Catalog.Claude != "/home/me/.claude" || f.Catalog.Codex != "/home/me/.codex" || fmt.Sprint(f.TaskDirs) != wantTasks ||
		f.MaxImageBytes != 20<<20 || f.MaxFileBytes != 25<<20 {
		t.Errorf("defaults: got %+v", f)
	}

	env[EnvClaudeConfigDir], env[EnvCodexHome], env["CLAUDE_CODE_TMPDIR"] = "/cfg/claude", "/cfg/codex", "/scratch"
	env[EnvUploadImageMaxMB], env[EnvUploadFileMaxMB] = "5", "100"
	if cfg, err = LoadConfig(getenv); err != nil {
		t.Fatal(err)
	}
	f = cfg.Files
	if f.Catalog.Claude != "/cfg/claude" || f.Catalog.Codex != "/cfg/codex" || fmt.Sprint(f.TaskDirs) != "[/scratch]" ||
		f.MaxImageBytes != 5<<20 || f.MaxFileBytes != 100<<20 {
		t.Errorf("set: got %+v", f)
	}
	env[EnvTaskDirs] = "/a:/b"
	if cfg, _ = LoadConfig(getenv); fmt.Sprint(cfg.Files.TaskDirs) != "[/a /b]" {
		t.Errorf("%s=/a:/b: got %v", EnvTaskDirs, cfg.Files.TaskDirs)
	}

	for _, tt := range []struct{ k, v string }{
		{EnvTaskDirs, "/a:relative"},
		{EnvUploadImageMaxMB, "0"},
		{EnvUploadFileMaxMB, "2000"},
		{EnvUploadImageMaxMB, "17592186044421"}, // 2^44+5: 5 MiB once shifted by 20 bits
		{EnvClaudeConfigDir, "rel/claude"},
		{EnvCodexHome, "x"},
	} {
		t.Run(tt.k+"="+tt.v, func(t *testing.T) {
			bad := map[string]string{"SVC_CODE_HOME": env["SVC_CODE_HOME"], "HOME": "/home/me", tt.k: tt.v}
			if _, err := LoadConfig(func(k string) string { return bad[k] }); err == nil {
				t.Errorf("no error")
			}
		})
	}
}
