package app

import (
	"os"
	"os/user"
	"path/filepath"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/services/chat/internal/catalog"
	"github.com/svc-code/svc-code/services/chat/internal/tasks"
	"github.com/svc-code/svc-code/services/chat/internal/uploads"
)

// Variables of the task, catalog and upload routes.
const (
	// EnvTaskDirs lists the directories searched for background task files
	// (filepath.ListSeparator between them); default tasks.DefaultRoots.
	EnvTaskDirs = "CHAT_TASK_DIRS"
	// EnvUploadImageMaxMB and EnvUploadFileMaxMB bound an upload (MiB).
	EnvUploadImageMaxMB = "CHAT_UPLOAD_IMAGE_MAX_MB"
	EnvUploadFileMaxMB  = "CHAT_UPLOAD_FILE_MAX_MB"
	// The agents' own variables, honoured so that chat reads the
	// directories the CLIs it starts use.
	EnvClaudeConfigDir = "CLAUDE_CONFIG_DIR"
	EnvCodexHome       = "CODEX_HOME"
)

// FilesConfig is where the task, catalog and upload routes read and write.
type FilesConfig struct {
	// Catalog holds the user's Claude Code directory (CLAUDE_CONFIG_DIR,
	// else $HOME/.claude) and Codex home (CODEX_HOME, else $HOME/.codex).
	Catalog catalog.Dirs
	// TaskDirs is CHAT_TASK_DIRS.
	TaskDirs []string
	// MaxImageBytes and MaxFileBytes are the upload limits.
	MaxImageBytes int64
	MaxFileBytes  int64
}

// loadFiles reads FilesConfig. HOME comes through getenv like everything
// else (tests point it at a directory of their own); only when it is unset
// is the home taken from the system (the user database).
func loadFiles(r *envconf.Reader) FilesConfig {
	home := r.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir // as the agents' CLIs find it without HOME
		}
	}
	if !filepath.IsAbs(home) {
		home = "/"
	}
	fc := FilesConfig{
		Catalog: catalog.Dirs{
			Claude: r.String(EnvClaudeConfigDir, filepath.Join(home, ".claude")),
			Codex:  r.String(EnvCodexHome, filepath.Join(home, ".codex")),
		},
		TaskDirs: tasks.DefaultRoots(r.Getenv),
	}
	// Checked in MiB, before the shift: a huge value must not wrap around
	// into the range.
	for _, lim := range []struct {
		name string
		def  int
		dst  *int64
	}{
		{EnvUploadImageMaxMB, uploads.DefaultMaxImageBytes >> 20, &fc.MaxImageBytes},
		{EnvUploadFileMaxMB, uploads.DefaultMaxFileBytes >> 20, &fc.MaxFileBytes},
	} {
		mb := r.Int(lim.name, lim.def)
		if mb < 1 || mb > 1024 {
			r.Fail("%s=%d: want 1 to 1024 (MiB)", lim.name, mb)
			continue
		}
		*lim.dst = int64(mb) << 20
	}
	if v := r.Getenv(EnvTaskDirs); v != "" {
		fc.TaskDirs = filepath.SplitList(v)
	}
	for _, d := range fc.TaskDirs {
		if !filepath.IsAbs(d) {
			r.Fail("%s: %q is not an absolute path", EnvTaskDirs, d)
		}
	}
	for name, d := range map[string]string{EnvClaudeConfigDir: fc.Catalog.Claude, EnvCodexHome: fc.Catalog.Codex} {
		if !filepath.IsAbs(d) {
			r.Fail("%s=%q: want an absolute path", name, d)
		}
	}
	return fc
}
