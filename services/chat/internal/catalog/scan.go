package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxCommandDepth bounds how deep command subdirectories are read.
const maxCommandDepth = 4

// source is one place entries of a kind are read from.
type source struct {
	scope, plugin, dir string
	// prefix is put before each name ("my-plugin:").
	prefix string
}

// precedence ranks scopes per kind, lowest wins: for commands and skills
// the personal one wins over the project's (Claude Code's rule for skills,
// which commands are part of), for agents the project's wins over the
// personal one (Claude Code's rule for sub-agents). Plugin and Codex
// entries have names of their own and never collide with these.
func precedence(kind, scope string) int {
	order := map[string][]string{
		KindCommand: {ScopePersonal, ScopeProject, ScopePlugin, ScopeCodex},
		KindSkill:   {ScopePersonal, ScopeProject, ScopePlugin},
		KindAgent:   {ScopeProject, ScopePersonal, ScopePlugin},
	}[kind]
	for i, s := range order {
		if s == scope {
			return i
		}
	}
	return len(order)
}

// Catalog reads entries from the user's directories and a project's.
type Catalog struct {
	Dirs Dirs
}

// Commands lists the slash commands for the project at cwd ("" for none):
// personal, project, enabled plugins' and Codex's prompts.
func (c *Catalog) Commands(cwd string) ([]Entry, error) {
	var out []Entry
	for _, src := range c.sources(cwd, "commands") {
		found, err := readCommands(src)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	prompts, err := readFlat(source{scope: ScopeCodex, dir: filepath.Join(c.Dirs.Codex, "prompts")}, KindCommand)
	if err != nil {
		return nil, err
	}
	for i := range prompts {
		prompts[i].Provider = "codex"
		prompts[i].Invocation = "/prompts:" + prompts[i].Name
	}
	out = append(out, prompts...)
	return resolve(KindCommand, out), nil
}

// Agents lists the sub-agents for the project at cwd.
func (c *Catalog) Agents(cwd string) ([]Entry, error) {
	var out []Entry
	for _, src := range c.sources(cwd, "agents") {
		found, err := readFlat(src, KindAgent)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return resolve(KindAgent, out), nil
}

// Skills lists the skills for the project at cwd.
func (c *Catalog) Skills(cwd string) ([]Entry, error) {
	var out []Entry
	for _, src := range c.sources(cwd, "skills") {
		found, err := readSkills(src)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return resolve(KindSkill, out), nil
}

// sources lists where entries kept in subdirectory sub ("commands") are
// read from: personal, project, then each enabled plugin.
func (c *Catalog) sources(cwd, sub string) []source {
	srcs := []source{{scope: ScopePersonal, dir: filepath.Join(c.Dirs.Claude, sub)}}
	if cwd != "" {
		srcs = append(srcs, source{scope: ScopeProject, dir: filepath.Join(cwd, ".claude", sub)})
	}
	plugins, _ := c.Plugins(cwd) // a broken registry only hides plugin entries
	for _, p := range plugins {
		if p.Enabled && p.Applies && p.InstallPath != "" {
			srcs = append(srcs, source{scope: ScopePlugin, plugin: p.ID, dir: filepath.Join(p.InstallPath, sub), prefix: p.Name + ":"})
		}
	}
	return srcs
}

// resolve marks, among entries of one name, all but the one of the best
// precedence as shadowed, and sorts by name then precedence.
func resolve(kind string, entries []Entry) []Entry {
	for i := range entries {
		entries[i].Kind = kind
		if entries[i].Provider == "" {
			entries[i].Provider = "claude"
		}
		if kind == KindCommand && entries[i].Invocation == "" {
			entries[i].Invocation = "/" + entries[i].Name
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return precedence(kind, a.Scope) < precedence(kind, b.Scope)
	})
	for i := range entries {
		if i > 0 && entries[i].Name == entries[i-1].Name && entries[i].Provider == entries[i-1].Provider {
			winner := entries[i-1].Scope
			if entries[i-1].ShadowedBy != "" {
				winner = entries[i-1].ShadowedBy
			}
			entries[i].Active, entries[i].ShadowedBy = false, winner
		}
	}
	return entries
}

// readCommands reads the *.md files below src.dir, subdirectories naming
// with ':' ("frontend/component.md" is "frontend:component").
func readCommands(src source) ([]Entry, error) {
	// The directory itself may be a symlink (dotfiles): walk its target.
	dir, err := filepath.EvalSymlinks(src.dir)
	if err != nil {
		return nil, nil //nolint:nilerr // missing, not a directory or unreadable: it has no commands
	}
	var out []Entry
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable subdirectory hides only itself
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(rel, string(filepath.Separator)) >= maxCommandDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		stem, ok := strings.CutSuffix(rel, ".md")
		if !ok || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		e, err := readEntry(filepath.Join(src.dir, rel))
		if err != nil {
			return nil //nolint:nilerr // a file that went away or is not regular is not listed
		}
		e.Name = src.prefix + strings.ReplaceAll(stem, string(filepath.Separator), ":")
		e.Scope, e.Plugin = src.scope, src.plugin
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read commands %s: %w", src.dir, err)
	}
	return out, nil
}

// readFlat reads the *.md files directly in src.dir (agents, Codex
// prompts); an agent's frontmatter name, when set, names it.
func readFlat(src source, kind string) ([]Entry, error) {
	files, err := os.ReadDir(src.dir)
	if err != nil {
		return nil, nil //nolint:nilerr // missing, not a directory or unreadable: it has no entries
	}
	var out []Entry
	for _, f := range files {
		stem, ok := strings.CutSuffix(f.Name(), ".md")
		if !ok || f.IsDir() || strings.HasPrefix(f.Name(), ".") {
			continue
		}
		e, err := readEntry(filepath.Join(src.dir, f.Name()))
		if err != nil {
			continue
		}
		name := stem
		if n, ok := e.Frontmatter["name"].(string); ok && kind == KindAgent && strings.TrimSpace(n) != "" {
			name = strings.TrimSpace(n)
		}
		e.Name, e.Scope, e.Plugin = src.prefix+name, src.scope, src.plugin
		out = append(out, e)
	}
	return out, nil
}

// readSkills reads src.dir/*/SKILL.md; the frontmatter name, when set,
// names the skill, else its directory.
func readSkills(src source) ([]Entry, error) {
	dirs, err := os.ReadDir(src.dir)
	if err != nil {
		return nil, nil //nolint:nilerr // missing, not a directory or unreadable: it has no skills
	}
	var out []Entry
	for _, d := range dirs {
		if strings.HasPrefix(d.Name(), ".") {
			continue
		}
		e, err := readEntry(filepath.Join(src.dir, d.Name(), "SKILL.md"))
		if err != nil {
			continue
		}
		name := d.Name()
		if n, ok := e.Frontmatter["name"].(string); ok && strings.TrimSpace(n) != "" {
			name = strings.TrimSpace(n)
		}
		e.Name, e.Scope, e.Plugin = src.prefix+name, src.scope, src.plugin
		out = append(out, e)
	}
	return out, nil
}

// Plugin is one installation of a Claude Code plugin.
type Plugin struct {
	// ID is "name@marketplace", as installed_plugins.json keys it.
	ID          string `json:"id"`
	Name        string `json:"name"`
	Marketplace string `json:"marketplace"`
	Version     string `json:"version"`
	Description string `json:"description"`
	Author      string `json:"author,omitempty"`
	// Scope is the install scope: "user", "project" or "local".
	Scope       string `json:"scope"`
	ProjectPath string `json:"project_path,omitempty"`
	InstallPath string `json:"install_path"`
	// Enabled by enabledPlugins in the settings files; Applies when the
	// installation is for every project (user scope) or for cwd.
	Enabled     bool   `json:"enabled"`
	Applies     bool   `json:"applies"`
	InstalledAt string `json:"installed_at,omitempty"`
	Commands    int    `json:"commands"`
	Agents      int    `json:"agents"`
	Skills      int    `json:"skills"`
	Error       string `json:"error,omitempty"`
}

// ErrRegistry means installed_plugins.json cannot be parsed.
var ErrRegistry = errors.New("malformed plugin registry")

// installRecord is one installation in installed_plugins.json: version 2
// keeps a list of them per plugin id, version 1 a single object.
type installRecord struct {
	Scope       string `json:"scope"`
	ProjectPath string `json:"projectPath"`
	InstallPath string `json:"installPath"`
	Version     string `json:"version"`
	InstalledAt string `json:"installedAt"`
}

// Plugins lists the installed plugins, for the project at cwd, sorted by
// id. A missing registry lists none.
func (c *Catalog) Plugins(cwd string) ([]Plugin, error) {
	path := filepath.Join(c.Dirs.Claude, "plugins", "installed_plugins.json")
	raw, err := readSmall(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []Plugin{}, nil
	}
	if err != nil {
		return nil, err
	}
	var reg struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &reg); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRegistry, path, err)
	}
	enabled := c.enabledPlugins(cwd)
	out := []Plugin{}
	for id, v := range reg.Plugins {
		var recs []installRecord
		if err := json.Unmarshal(v, &recs); err != nil {
			var one installRecord
			if err := json.Unmarshal(v, &one); err != nil {
				out = append(out, Plugin{ID: id, Error: "unreadable entry in installed_plugins.json"})
				continue
			}
			recs = []installRecord{one}
		}
		for _, r := range recs {
			out = append(out, c.plugin(id, r, cwd, enabled))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Scope+out[i].ProjectPath < out[j].Scope+out[j].ProjectPath
	})
	return out, nil
}

func (c *Catalog) plugin(id string, r installRecord, cwd string, enabled map[string]bool) Plugin {
	name, market, _ := strings.Cut(id, "@")
	scope := r.Scope
	if scope == "" {
		scope = "user"
	}
	p := Plugin{
		ID: id, Name: name, Marketplace: market, Version: r.Version, Scope: scope,
		ProjectPath: r.ProjectPath, InstallPath: r.InstallPath, InstalledAt: r.InstalledAt,
		Enabled: enabled[id],
		Applies: scope == "user" || (cwd != "" && filepath.Clean(r.ProjectPath) == cwd),
	}
	if r.InstallPath == "" {
		p.Error = "no installPath"
		return p
	}
	raw, err := readSmall(filepath.Join(r.InstallPath, ".claude-plugin", "plugin.json"))
	if err == nil {
		var m struct {
			Name        string          `json:"name"`
			Version     string          `json:"version"`
			Description string          `json:"description"`
			Author      json.RawMessage `json:"author"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			p.Error = "malformed .claude-plugin/plugin.json"
		} else {
			if m.Name != "" {
				p.Name = m.Name
			}
			if p.Version == "" {
				p.Version = m.Version
			}
			p.Description, p.Author = m.Description, author(m.Author)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		p.Error = "unreadable .claude-plugin/plugin.json"
	}
	src := source{scope: ScopePlugin, plugin: id, prefix: p.Name + ":"}
	src.dir = filepath.Join(r.InstallPath, "commands")
	cmds, _ := readCommands(src)
	src.dir = filepath.Join(r.InstallPath, "agents")
	agents, _ := readFlat(src, KindAgent)
	src.dir = filepath.Join(r.InstallPath, "skills")
	skills, _ := readSkills(src)
	p.Commands, p.Agents, p.Skills = len(cmds), len(agents), len(skills)
	return p
}

// author reads a manifest's author: a string or {"name": ...}.
func author(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Name
}

// enabledPlugins merges enabledPlugins of the user's settings, then the
// project's settings.json and settings.local.json (later files win).
func (c *Catalog) enabledPlugins(cwd string) map[string]bool {
	files := []string{filepath.Join(c.Dirs.Claude, "settings.json")}
	if cwd != "" {
		files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	enabled := map[string]bool{}
	for _, f := range files {
		raw, err := readSmall(f)
		if err != nil {
			continue
		}
		var s struct {
			EnabledPlugins map[string]any `json:"enabledPlugins"`
		}
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		for id, v := range s.EnabledPlugins {
			b, _ := v.(bool)
			enabled[id] = b
		}
	}
	return enabled
}

// maxJSONBytes bounds a settings, registry or manifest file.
const maxJSONBytes = 4 << 20

// readSmall reads a regular JSON file of at most 4 MiB (a project's
// settings may be a symlink to /dev/zero or a FIFO: refused, not read
// without end or waited on).
func readSmall(path string) ([]byte, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(raw) > maxJSONBytes {
		return nil, fmt.Errorf("%s: larger than 4 MiB", path)
	}
	return raw, nil
}
