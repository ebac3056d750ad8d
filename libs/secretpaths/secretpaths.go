// Package secretpaths knows where svc-code keeps what it must never hand
// out: the config directory (config.yaml holds the password hash and the
// keys that sign cookies and API tokens), the data home (internal.key,
// postgres.env, logs, the journals: the server's own state) and every file
// a *_FILE variable names (the project's convention for secrets passed as
// files). The writers of these files take their names from here
// (internalauth, svcenv), and shadow's file routes refuse every path of a
// Set, so a secret added under these names is refused the day it is
// written.
//
// The package only lists paths, lexically; resolving symbolic links and
// checking a request's path is the user's job (shadow's roots package).
package secretpaths

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/datahome"
)

// Files of the data home that hold secrets. Every service that keeps a
// secret in the data home names its file here and takes the name from
// here.
const (
	// InternalKeyFile holds the internal credential (libs/internalauth).
	InternalKeyFile = "internal.key"
	// PostgresEnvFile holds the database URLs with their passwords, written
	// by deploy/scripts/provision.sh (libs/svcenv reads it).
	PostgresEnvFile = "postgres.env"
)

// DataHomeFiles are the secret files of the data home, by name.
var DataHomeFiles = []string{InternalKeyFile, PostgresEnvFile}

// DataHomePrivateDirs are the data home's directories that stay private
// even when the data home as a whole cannot be (see For): the services'
// logs and the journals.
var DataHomePrivateDirs = []string{"logs", "projects"}

// UploadsDir is the data home's directory of files users attach to their
// prompts (chat's uploads): the one part of the data home that is the
// user's and stays open.
const UploadsDir = "uploads"

// ConfigDirName is svc-code's directory in the user's config directory.
const ConfigDirName = "svc-code"

// Set is what is private, as absolute, clean, unresolved paths.
type Set struct {
	// Trees are private, with everything below them.
	Trees []string
	// Open are trees inside Trees that are not private after all (the
	// data home's uploads). A path in Files is private even inside Open.
	Open []string
	// Files are private files: the secret files themselves. They are also
	// in Trees (or below one); listed apart so that a caller can match
	// hard links to them by device and inode.
	Files []string
}

// Private reports, lexically, whether p (absolute and clean) is private.
func (s Set) Private(p string) bool {
	for _, f := range s.Files {
		if p == f {
			return true
		}
	}
	for _, o := range s.Open {
		if within(p, o) {
			return false
		}
	}
	for _, t := range s.Trees {
		if within(p, t) {
			return true
		}
	}
	return false
}

// FileVars are the variables whose _FILE form names a secret file; For
// checks them whatever the environment's list of names says.
var FileVars = []string{
	"SVC_INTERNAL_SECRET", "SVC_CODE_PASSWORD", "DATABASE_URL", "READONLY_DATABASE_URL",
	"REDIS_URL", "REDIS_PASSWORD",
}

// For lists the private paths of the environment that getenv reads;
// environ is the environment as os.Environ lists it (KEY=VALUE), of which
// only the names are used (values come through getenv):
//
//   - the config directories: $XDG_CONFIG_HOME/svc-code (when set) and
//     $HOME/.config/svc-code, both whatever this process uses (the gateway
//     may run with another environment), and SVC_CONFIG with its lock file
//     when set;
//   - the data home, whole, except its uploads directory. When the data
//     home holds the home directory (SVC_CODE_HOME=$HOME, or /), denying it
//     whole would deny everything: then only its secret files, logs and
//     journals are;
//   - ~/.svc-code, where the default instance and every host profile keep
//     their data homes, whichever instance this is;
//   - the file named by every *_FILE variable (of FileVars, or any name in
//     environ that ends in _FILE) holding an absolute path.
func For(getenv func(string) string, environ []string) Set {
	var s Set
	home := getenv("HOME")
	if home != "" && filepath.IsAbs(home) {
		home = filepath.Clean(home)
		s.Trees = append(s.Trees, filepath.Join(home, ".config", ConfigDirName))
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		s.Trees = append(s.Trees, filepath.Join(filepath.Clean(x), ConfigDirName))
	}
	if p := getenv("SVC_CONFIG"); p != "" {
		if cfg, err := configfile.DefaultPath(getenv); err == nil {
			s.Files = append(s.Files, cfg, cfg+".lock")
		}
	}
	for _, dir := range s.Trees {
		cfg := filepath.Join(dir, "config.yaml")
		s.Files = append(s.Files, cfg, cfg+".lock")
	}
	if dh, err := datahome.Dir(getenv); err == nil && dh != "" {
		for _, name := range DataHomeFiles {
			s.Files = append(s.Files, filepath.Join(dh, name))
		}
		if dh == "/" || home != "" && within(home, dh) {
			for _, d := range DataHomePrivateDirs {
				s.Trees = append(s.Trees, filepath.Join(dh, d))
			}
		} else {
			s.Trees = append(s.Trees, dh)
			s.Open = append(s.Open, filepath.Join(dh, UploadsDir))
		}
	}
	// Every instance of this user keeps its data home below ~/.svc-code by
	// default (the default instance's, and each host profile's): another
	// instance's secrets are as private as this one's.
	if home != "" && filepath.IsAbs(home) {
		s.Trees = append(s.Trees, filepath.Join(home, ".svc-code"))
	}
	names := make([]string, 0, len(FileVars)+len(environ))
	for _, v := range FileVars {
		names = append(names, v+"_FILE")
	}
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_FILE") {
			names = append(names, k)
		}
	}
	for _, k := range names {
		if v := getenv(k); filepath.IsAbs(v) {
			s.Files = append(s.Files, filepath.Clean(v))
		}
	}
	s.Trees = append(s.Trees, s.Files...)
	for _, l := range []*[]string{&s.Trees, &s.Open, &s.Files} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return s
}

// within reports whether p is dir or below it, by whole path elements.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}
