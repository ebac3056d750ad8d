// Package search finds lines matching a pattern under a directory, with
// ripgrep when it is installed and with a walk in Go otherwise. Both
// engines share one set of rules and one answer: hidden files are searched,
// .git directories and binary files (a NUL byte in their first 64 KiB) are
// not, symbolic links are not followed, .gitignore files apply inside a git
// repository (from the file's directory up to the repository's root), and
// include/exclude globs work as ripgrep's --glob (an include glob selects
// files and overrides .gitignore; an exclude glob drops files and whole
// directories). Results come in path order, one per matching line.
package search

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Defaults and limits of a search.
const (
	DefaultMaxResults = 500
	MaxMaxResults     = 5000
	// MaxFileSize: larger files are not searched.
	MaxFileSize = 10 << 20
	// MaxLineBytes bounds the text of a match; longer lines are cut.
	MaxLineBytes = 500
	// binaryWindow is how much of a file is checked for a NUL byte.
	binaryWindow = 64 << 10
)

// Case selects case sensitivity.
type Case string

// Cases: Smart is insensitive unless the pattern holds an upper-case letter.
const (
	Smart       Case = "smart"
	Sensitive   Case = "sensitive"
	Insensitive Case = "insensitive"
)

// Engine names.
const (
	EngineRipgrep = "rg"
	EngineGo      = "go"
)

// Query is one search.
type Query struct {
	// Root is the directory searched: absolute and resolved.
	Root    string
	Pattern string
	// Regex: Pattern is a regular expression (RE2 syntax); otherwise a
	// literal string.
	Regex   bool
	Case    Case
	Include []string
	Exclude []string
	// MaxResults caps the matches; one more means Truncated.
	MaxResults int
	// Private, when set, names what no answer may come from (svc-code's
	// secrets): the walk enters no such directory and reads no such file,
	// and ripgrep's matches in one are dropped (so Private must also hold
	// for every path below a private directory).
	Private func(abs string, isDir bool) bool
}

// Match is one matching line.
type Match struct {
	Path   string `json:"path"`   // absolute
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based byte offset of the first match
	Text   string `json:"text"`   // the line, without its end, cut at MaxLineBytes
}

// Result is a search's answer.
type Result struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated"`
	Engine    string  `json:"engine"`
}

// ErrInvalid is a query the engines refuse (bad regex, bad glob); its text
// is safe to show.
var ErrInvalid = errors.New("invalid search")

// Searcher runs searches with ripgrep when its path is set, else in Go.
type Searcher struct {
	// Rg is the ripgrep executable; empty means the Go walk.
	Rg string
}

// New finds ripgrep on PATH.
func New() *Searcher {
	rg, _ := exec.LookPath("rg")
	return &Searcher{Rg: rg}
}

// Search runs q with engine ("" for the default one, EngineRipgrep or
// EngineGo).
func (s *Searcher) Search(ctx context.Context, q Query, engine string) (Result, error) {
	if err := q.validate(); err != nil {
		return Result{}, err
	}
	switch engine {
	case "":
		if s.Rg != "" {
			return searchRg(ctx, s.Rg, q)
		}
		return searchGo(ctx, q)
	case EngineRipgrep:
		if s.Rg == "" {
			return Result{}, fmt.Errorf("%w: ripgrep is not installed", ErrInvalid)
		}
		return searchRg(ctx, s.Rg, q)
	case EngineGo:
		return searchGo(ctx, q)
	}
	return Result{}, fmt.Errorf("%w: unknown engine %q (rg or go)", ErrInvalid, engine)
}

func (q *Query) validate() error {
	switch {
	case q.Pattern == "":
		return fmt.Errorf("%w: empty pattern", ErrInvalid)
	case strings.ContainsAny(q.Pattern, "\n\x00"):
		return fmt.Errorf("%w: the pattern may not hold a newline or NUL (matching is per line)", ErrInvalid)
	case !utf8.ValidString(q.Pattern):
		return fmt.Errorf("%w: the pattern is not valid UTF-8", ErrInvalid)
	}
	switch q.Case {
	case "":
		q.Case = Smart
	case Smart, Sensitive, Insensitive:
	default:
		return fmt.Errorf("%w: case must be smart, sensitive or insensitive", ErrInvalid)
	}
	if q.MaxResults <= 0 {
		q.MaxResults = DefaultMaxResults
	}
	q.MaxResults = min(q.MaxResults, MaxMaxResults)
	if q.Regex {
		if _, err := regexp.Compile(q.Pattern); err != nil {
			return fmt.Errorf("%w: bad regular expression: %s", ErrInvalid, err.Error())
		}
	}
	for _, g := range append(append([]string(nil), q.Include...), q.Exclude...) {
		if g == "" || strings.HasPrefix(g, "!") || strings.ContainsAny(g, "\n\x00") {
			return fmt.Errorf("%w: bad glob %q", ErrInvalid, g)
		}
	}
	return nil
}

// ignoreCase reports whether q matches regardless of case.
func (q Query) ignoreCase() bool {
	switch q.Case {
	case Insensitive:
		return true
	case Sensitive:
		return false
	}
	return !strings.ContainsFunc(q.Pattern, unicode.IsUpper)
}

// compile is the regular expression both engines mean.
func (q Query) compile() *regexp.Regexp {
	expr := q.Pattern
	if !q.Regex {
		expr = regexp.QuoteMeta(expr)
	}
	if q.ignoreCase() {
		expr = "(?i)" + expr
	}
	return regexp.MustCompile(expr) // validated
}

// compileWhole is compile in multi-line mode, for a whole file: every
// line match is also a match of it. nil when the pattern holds \A, \z or
// flags of its own, which could change that.
func (q Query) compileWhole() *regexp.Regexp {
	if q.Regex && (strings.Contains(q.Pattern, `\A`) || strings.Contains(q.Pattern, `\z`) || strings.Contains(q.Pattern, "(?")) {
		return nil
	}
	expr := q.Pattern
	if !q.Regex {
		expr = regexp.QuoteMeta(expr)
	}
	flags := "(?m)"
	if q.ignoreCase() {
		flags = "(?mi)"
	}
	return regexp.MustCompile(flags + expr)
}

// overrideLines are the include and exclude globs in .gitignore syntax:
// an include is a "whitelist" line, an exclude an ignore line; .git is
// always excluded. The last matching line wins, as with ripgrep's -g.
func (q Query) overrideLines() []string {
	var lines []string
	lines = append(lines, q.Include...)
	for _, g := range q.Exclude {
		lines = append(lines, "!"+g)
	}
	return append(lines, "!.git")
}

// cutLine trims the line end and cuts the text at MaxLineBytes on a rune
// boundary; invalid UTF-8 becomes U+FFFD.
func cutLine(s string) string {
	s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	if len(s) > MaxLineBytes {
		cut := MaxLineBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
