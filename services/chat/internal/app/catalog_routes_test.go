package app

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// TestCatalogRoutes: chat reads the catalog from $HOME of its environment
// (and CODEX_HOME), and edits commands there.
func TestCatalogRoutes(t *testing.T) {
	home, codex, project := t.TempDir(), t.TempDir(), t.TempDir()
	for path, content := range map[string]string{
		filepath.Join(home, ".claude", "commands", "review.md"):             "---\ndescription: Review\n---\nReview it\n",
		filepath.Join(home, ".claude", "agents", "helper.md"):               "---\nname: helper\ndescription: Helps\n---\nhelp\n",
		filepath.Join(home, ".claude", "skills", "pdf", "SKILL.md"):         "---\nname: pdf\ndescription: PDFs\n---\nx\n",
		filepath.Join(codex, "prompts", "draft.md"):                         "Draft it\n",
		filepath.Join(project, ".claude", "commands", "deploy.md"):          "Deploy\n",
		filepath.Join(home, ".claude", "plugins", "installed_plugins.json"): `{"version":2,"plugins":{}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"HOME": home, "CODEX_HOME": codex}, nil, nil, nil)

	got := c.do(http.MethodGet, "/api/commands?cwd="+project, "")
	got.want(t, http.StatusOK, "")
	if list, _ := got.body["commands"].([]any); len(list) != 3 {
		t.Errorf("commands: got %s, want deploy, draft and review", got.raw)
	}
	for _, path := range []string{"/api/agents", "/api/skills", "/api/plugins"} {
		got := c.do(http.MethodGet, path, "")
		got.want(t, http.StatusOK, "")
	}

	got = c.do(http.MethodPost, "/api/commands", `{"scope":"project","cwd":`+quote(project)+`,"name":"ship","content":"Ship it\n"}`)
	got.want(t, http.StatusCreated, "")
	if _, err := os.Stat(filepath.Join(project, ".claude", "commands", "ship.md")); err != nil {
		t.Error(err)
	}
	c.do(http.MethodPost, "/api/commands", `{"scope":"personal","name":"../../x","content":"x"}`).want(t, http.StatusBadRequest, "bad_request")
	c.do(http.MethodDelete, "/api/commands/ship?scope=project&cwd="+project, "").want(t, http.StatusOK, "")
	c.do(http.MethodDelete, "/api/commands/ship?scope=project&cwd="+project, "").want(t, http.StatusNotFound, "not_found")
}
