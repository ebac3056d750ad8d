package helpers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Targets are the places helpers go: ~/.local/bin for the CLIs and the
// agents directory of the agent's config directory for the template.
type Targets struct {
	// BinDir receives the CLIs (~/.local/bin).
	BinDir string
	// AgentsDir receives the agent template (<agent config dir>/agents).
	AgentsDir string
	// Windows: the CLIs are installed only when Bash is set, each with a
	// .cmd wrapper that runs it with that bash.
	Windows bool
	// Bash is the bash that runs the CLIs on Windows ("" when none found).
	Bash string
}

// DefaultTargets are the targets for the user whose home is home, with
// getenv for CLAUDE_CONFIG_DIR. On Windows it looks for a bash on PATH and
// next to git.
func DefaultTargets(home string, getenv func(string) string) Targets {
	config := getenv("CLAUDE_CONFIG_DIR")
	if config == "" {
		config = filepath.Join(home, ".claude")
	}
	t := Targets{
		BinDir:    filepath.Join(home, ".local", "bin"),
		AgentsDir: filepath.Join(config, "agents"),
		Windows:   runtime.GOOS == "windows",
	}
	if t.Windows {
		t.Bash = findWindowsBash()
	}
	return t
}

// findWindowsBash finds bash.exe on PATH, else beside git (Git for
// Windows keeps it in <git>/bin, git.exe itself being in <git>/cmd).
func findWindowsBash() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	g, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	root := filepath.Dir(filepath.Dir(g))
	for _, c := range []string{filepath.Join(root, "bin", "bash.exe"), filepath.Join(root, "usr", "bin", "bash.exe")} {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	return ""
}

// Target is where h is installed.
func (t Targets) Target(h Helper) string {
	if h.Kind == CLI {
		return filepath.Join(t.BinDir, h.Name)
	}
	return filepath.Join(t.AgentsDir, h.Name)
}

// FileStatus is one helper's install and freshness state.
type FileStatus struct {
	Name      string `json:"name"`
	Target    string `json:"target"`
	Installed bool   `json:"installed"`
	// UpToDate: installed, with the packaged content (a local edit makes
	// it false).
	UpToDate bool `json:"up_to_date"`
	// Hash is the SHA-256 (hex) of the packaged file.
	Hash string `json:"hash"`
	// InstalledHash is the SHA-256 of the installed copy, nil when absent.
	InstalledHash *string `json:"installed_hash"`
	// Skipped says why a helper is not installed here (a CLI on Windows
	// with no bash), empty otherwise.
	Skipped string `json:"skipped,omitempty"`
}

// Status is the state of every helper.
type Status struct {
	Files []FileStatus `json:"files"`
	// AllCurrent: every helper that can be installed here is installed and
	// up to date.
	AllCurrent bool `json:"all_current"`
}

const noBash = "no bash found: the command-line helpers need one on Windows"

// Hash is the SHA-256 (hex) of b.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CheckStatus compares the installed copies with the packaged helpers.
func CheckStatus(t Targets) (Status, error) {
	st := Status{AllCurrent: true}
	for _, h := range Installed {
		packaged, err := fs.ReadFile(Files, h.Name)
		if err != nil {
			return Status{}, fmt.Errorf("packaged %s: %w", h.Name, err)
		}
		f := FileStatus{Name: h.Name, Target: t.Target(h), Hash: Hash(packaged)}
		if h.Kind == CLI && t.Windows && t.Bash == "" {
			f.Skipped = noBash
		}
		installed, err := os.ReadFile(f.Target)
		switch {
		case err == nil:
			ih := Hash(installed)
			f.Installed, f.InstalledHash, f.UpToDate = true, &ih, ih == f.Hash
		case errors.Is(err, fs.ErrNotExist):
		default:
			return Status{}, fmt.Errorf("read installed %s: %w", f.Target, err)
		}
		if !f.UpToDate && f.Skipped == "" {
			st.AllCurrent = false
		}
		st.Files = append(st.Files, f)
	}
	return st, nil
}

// Install writes every helper to its target, replacing what is there
// (local edits included), as install.sh --update does; each file is
// written to a temporary name and renamed, so a reader never sees half a
// file. On Windows the CLIs get .cmd wrappers, or are skipped with no bash.
func Install(t Targets) (Status, error) {
	for _, h := range Installed {
		if h.Kind == CLI && t.Windows && t.Bash == "" {
			continue
		}
		b, err := fs.ReadFile(Files, h.Name)
		if err != nil {
			return Status{}, fmt.Errorf("packaged %s: %w", h.Name, err)
		}
		mode := os.FileMode(0o644)
		if h.Kind == CLI {
			mode = 0o755
		}
		target := t.Target(h)
		if err := writeAtomic(target, b, mode); err != nil {
			return Status{}, err
		}
		if h.Kind == CLI && t.Windows {
			if err := writeAtomic(target+".cmd", []byte(cmdWrapper(t.Bash)), 0o644); err != nil {
				return Status{}, err
			}
		}
	}
	return CheckStatus(t)
}

// cmdWrapper is a .cmd file that runs the script of its own name (without
// the extension) with bash, passing every argument.
func cmdWrapper(bash string) string {
	return strings.Join([]string{"@echo off", `"` + bash + `" "%~dpn0" %*`, ""}, "\r\n")
}

func writeAtomic(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, mode)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		return fmt.Errorf("install %s: %w", path, werr)
	}
	return nil
}
