// Package configfile reads and writes svc-code's YAML configuration file
// (~/.config/svc-code/config.yaml). The file is private (mode 0600 in a 0700
// directory), every write is atomic (temporary file, fsync, rename) and
// serialised across processes with an advisory lock, and keys this build
// does not know are kept as they were, comments included.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/svc-code/svc-code/libs/profile"
)

// DefaultPath is $SVC_CONFIG, else $XDG_CONFIG_HOME/svc-code/config.yaml,
// else ~/.config/svc-code/config.yaml. For the host profile
// SVC_CODE_PROFILE=NAME, the file is svc-code/profiles/NAME/config.yaml in
// the same directory, unless SVC_CONFIG is set.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv("SVC_CONFIG"); p != "" {
		return filepath.Abs(p)
	}
	name, err := profile.Name(getenv)
	if err != nil {
		return "", err
	}
	dir := ""
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		dir = filepath.Join(x, "svc-code")
	} else {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", errors.New("cannot locate the config file: set HOME or SVC_CONFIG")
			}
			home = h
		}
		dir = filepath.Join(home, ".config", "svc-code")
	}
	if name != "" {
		dir = filepath.Join(dir, "profiles", name)
	}
	return filepath.Join(dir, "config.yaml"), nil
}

// File is the configuration file at one path.
type File struct{ path string }

// New returns the file at path; nothing is read or created yet.
func New(path string) *File { return &File{path: path} }

// Path is the file's location.
func (f *File) Path() string { return f.path }

// Read parses the file. A missing file reads as an empty document.
func (f *File) Read() (*Doc, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return newDoc(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", f.path, err)
	}
	return parse(f.path, b)
}

// Update reads the file under an exclusive lock, lets fn change the
// document, and writes it back atomically when fn changed anything. The
// directory is created with mode 0700 and the file is always left at 0600.
func (f *File) Update(fn func(*Doc) error) (*Doc, error) {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create config dir %s: %w", dir, err)
	}
	unlock, err := lock(f.path + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()

	doc, err := f.Read()
	if err != nil {
		return nil, err
	}
	before, err := doc.encode()
	if err != nil {
		return nil, err
	}
	if err := fn(doc); err != nil {
		return nil, err
	}
	after, err := doc.encode()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		if err := ensureMode(f.path); err != nil {
			return nil, err
		}
		return doc, nil
	}
	if err := writeAtomic(f.path, after); err != nil {
		return nil, err
	}
	return doc, nil
}

func ensureMode(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().Perm() != 0o600 {
		return os.Chmod(path, 0o600)
	}
	return nil
}

func lock(path string) (func(), error) {
	lf, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open config lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		_ = lf.Close()
		return nil, fmt.Errorf("lock config %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		_ = lf.Close()
	}, nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.tmp")
	if err != nil {
		return fmt.Errorf("write config %s: %w", path, err)
	}
	name := tmp.Name()
	defer func() { _ = os.Remove(name) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write config %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write config %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync config %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write config %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("replace config %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Doc is a parsed configuration document: a YAML mapping at the top level.
type Doc struct{ root *yaml.Node }

func newDoc() *Doc {
	return &Doc{root: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}}
}

func parse(path string, b []byte) (*Doc, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return newDoc(), nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("parse config %s: the top level must be a mapping of keys to values", path)
	}
	return &Doc{root: &root}, nil
}

func (d *Doc) mapping() *yaml.Node { return d.root.Content[0] }

func (d *Doc) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d.root); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

// node finds the value node of a top-level key.
func (d *Doc) node(key string) *yaml.Node {
	m := d.mapping()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func (d *Doc) setNode(key string, v *yaml.Node) {
	m := d.mapping()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v.HeadComment, v.LineComment = m.Content[i+1].HeadComment, m.Content[i+1].LineComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// Has reports whether a top-level key is present.
func (d *Doc) Has(key string) bool { return d.node(key) != nil }

// String returns a top-level scalar as text.
func (d *Doc) String(key string) (string, bool) {
	n := d.node(key)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}

// SetString sets a top-level key to a string scalar.
func (d *Doc) SetString(key, value string) {
	d.setNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
}

// Int returns a top-level integer. A value that is present but not an
// integer is an error, so a hand edit gone wrong is reported, not ignored.
func (d *Doc) Int(key string) (int64, bool, error) {
	n := d.node(key)
	if n == nil || n.Tag == "!!null" {
		return 0, false, nil
	}
	if n.Kind != yaml.ScalarNode {
		return 0, false, fmt.Errorf("config key %s: want an integer", key)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("config key %s: %q is not an integer", key, n.Value)
	}
	return v, true, nil
}

// SetInt sets a top-level key to an integer scalar.
func (d *Doc) SetInt(key string, value int64) {
	d.setNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(value, 10)})
}

// Strings returns a top-level sequence of scalars (a lone scalar counts as
// a list of one).
func (d *Doc) Strings(key string) ([]string, error) {
	n := d.node(key)
	if n == nil || n.Tag == "!!null" {
		return nil, nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("config key %s: want a list of strings", key)
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("config key %s: want a list of strings", key)
}

// Delete removes a top-level key.
func (d *Doc) Delete(key string) {
	m := d.mapping()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}
