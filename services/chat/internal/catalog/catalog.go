// Package catalog serves what the agents can be asked to use beyond plain
// prompts, read from the user's and the project's configuration
// directories: Claude Code's slash commands (GET /api/commands, with
// Codex's custom prompts), sub-agents (GET /api/agents), skills (GET
// /api/skills) and installed plugins (GET /api/plugins), each entry with
// its frontmatter, its scope and whether it is the one that wins when
// names collide. Personal, project and Codex commands can be created,
// edited and deleted (POST, PUT, DELETE under /api/commands).
//
// Where things are read (Dirs; the project is the query parameter cwd):
//
//   - personal: <claude dir>/commands/**/*.md, agents/*.md,
//     skills/*/SKILL.md, where <claude dir> is $CLAUDE_CONFIG_DIR, else
//     ~/.claude;
//   - project: <cwd>/.claude/commands/**/*.md, agents/*.md,
//     skills/*/SKILL.md;
//   - plugin: the same three below each enabled plugin's install path
//     (<claude dir>/plugins/installed_plugins.json, enabled by
//     enabledPlugins in <claude dir>/settings.json,
//     <cwd>/.claude/settings.json and <cwd>/.claude/settings.local.json,
//     the later winning), named "<plugin>:<name>";
//   - codex: <codex dir>/prompts/*.md, where <codex dir> is $CODEX_HOME,
//     else ~/.codex, invoked as /prompts:<name>.
//
// A command in a subdirectory is named with ':' between the parts
// (commands/frontend/component.md is "frontend:component").
package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Scopes of entries.
const (
	ScopePersonal = "personal"
	ScopeProject  = "project"
	ScopePlugin   = "plugin"
	ScopeCodex    = "codex"
)

// Kinds of entries.
const (
	KindCommand = "command"
	KindAgent   = "agent"
	KindSkill   = "skill"
)

// MaxFileBytes is the largest definition file read or written.
const MaxFileBytes = 256 << 10

// Dirs are the user's configuration directories.
type Dirs struct {
	// Claude is Claude Code's configuration directory (~/.claude).
	Claude string
	// Codex is Codex's home (~/.codex).
	Codex string
}

// Entry is one command, agent or skill.
type Entry struct {
	// Name is what it is called by: "review", "frontend:component",
	// "my-plugin:deploy".
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Invocation is how a prompt calls it ("/review", "/prompts:draft");
	// empty for agents and skills, which the agent picks itself.
	Invocation string `json:"invocation,omitempty"`
	Provider   string `json:"provider"` // "claude" or "codex"
	Scope      string `json:"scope"`
	// Plugin is the plugin id ("name@marketplace") of a plugin entry.
	Plugin      string         `json:"plugin,omitempty"`
	Path        string         `json:"path"`
	Description string         `json:"description"`
	Frontmatter map[string]any `json:"frontmatter"`
	// Error tells why the frontmatter could not be read; the entry is
	// still listed.
	Error     string    `json:"error,omitempty"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
	// Active is false when an entry of the same name and a higher
	// precedence wins; ShadowedBy is then the winner's scope.
	Active     bool   `json:"active"`
	ShadowedBy string `json:"shadowed_by,omitempty"`
	// Content is the whole file, on the single-command routes only.
	Content *string `json:"content,omitempty"`

	body string
}

// ErrFrontmatter marks a frontmatter that does not parse.
var ErrFrontmatter = errors.New("malformed frontmatter")

// splitFrontmatter separates a leading YAML frontmatter block ("---" line,
// YAML, "---" line) from the body. Without one, all is body.
func splitFrontmatter(content string) (fm map[string]any, body string, err error) {
	content = strings.TrimPrefix(content, "\uFEFF")
	first, rest, ok := strings.Cut(content, "\n")
	if !ok || strings.TrimRight(first, " \t\r") != "---" {
		return nil, content, nil
	}
	var yamlPart string
	for off := 0; ; {
		line, after, more := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			yamlPart, body = rest[:off], after
			break
		}
		if !more {
			return nil, content, fmt.Errorf("%w: no closing --- line", ErrFrontmatter)
		}
		off += len(line) + 1
	}
	fm = map[string]any{}
	if err := yaml.Unmarshal([]byte(yamlPart), &fm); err != nil {
		return nil, body, fmt.Errorf("%w: %w", ErrFrontmatter, err)
	}
	if fm == nil {
		fm = map[string]any{}
	}
	return jsonable(fm).(map[string]any), body, nil
}

// jsonable turns what YAML decodes into values encoding/json can write
// (maps with non-string keys get their keys printed).
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// describe picks an entry's description: the frontmatter's, else the
// first non-empty line of the body without its heading marks, at most 300
// characters.
func describe(fm map[string]any, body string) string {
	if d, ok := fm["description"].(string); ok && strings.TrimSpace(d) != "" {
		return clip(strings.TrimSpace(d))
	}
	for line := range strings.Lines(body) {
		if l := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#")); l != "" {
			return clip(l)
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) <= 300 {
		return s
	}
	cut := 300
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// openRegular opens path for reading when it is a regular file. It does
// not block: a FIFO (or a device) named like a definition or settings file
// is refused rather than waited on or read without end.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readEntry reads the definition file at path into an entry (name, kind,
// scope and invocation are the caller's).
func readEntry(path string) (Entry, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Entry{}, fmt.Errorf("read %s: %w", path, err)
	}
	e := Entry{Path: path, Size: fi.Size(), UpdatedAt: fi.ModTime().UTC(), Active: true}
	if len(raw) > MaxFileBytes {
		e.Error = fmt.Sprintf("larger than %d bytes: not read", MaxFileBytes)
		e.Frontmatter = map[string]any{}
		return e, nil
	}
	content := string(bytes.ToValidUTF8(raw, []byte("\uFFFD")))
	fm, body, err := splitFrontmatter(content)
	if err != nil {
		e.Error = err.Error()
	}
	if fm == nil {
		fm = map[string]any{}
	}
	e.Frontmatter, e.body = fm, body
	e.Description = describe(fm, body)
	e.Content = &content
	return e, nil
}
