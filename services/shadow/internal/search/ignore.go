package search

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// Matcher matches slash-separated paths against gitignore-style patterns:
// the patterns of one .gitignore file (relative to its directory) or the
// include and exclude globs of a search (relative to the search root). The
// rules are git's, as ripgrep applies them: "#" comments, "!" negation, a
// trailing "/" for directories only, a pattern with no other "/" matches a
// name at any depth, one with a "/" is anchored; "*" and "?" never match
// "/", "**" matches across directories, "[...]" classes, "\" escapes.
type Matcher struct {
	pats []pattern
}

type pattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ParseGitignore reads the patterns of a .gitignore file; lines it cannot
// understand are skipped, as git does.
func ParseGitignore(data []byte) *Matcher {
	m := &Matcher{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if p, ok := parseLine(sc.Text()); ok {
			m.pats = append(m.pats, p)
		}
	}
	return m
}

// NewMatcher builds a Matcher from lines in .gitignore syntax, reporting
// whether any line was refused.
func NewMatcher(lines []string) (*Matcher, bool) {
	m := &Matcher{}
	allOK := true
	for _, l := range lines {
		p, ok := parseLine(l)
		if !ok {
			allOK = false
			continue
		}
		m.pats = append(m.pats, p)
	}
	return m, allOK
}

// Match reports whether the last pattern that matches rel (a path relative
// to the matcher's directory, slash-separated, no leading "/") exists and
// whether it was a negated ("!") one.
func (m *Matcher) Match(rel string, isDir bool) (matched, negated bool) {
	if m == nil {
		return false, false
	}
	for i := len(m.pats) - 1; i >= 0; i-- {
		p := m.pats[i]
		if p.dirOnly && !isDir {
			continue
		}
		if p.re.MatchString(rel) {
			return true, p.negate
		}
	}
	return false, false
}

func parseLine(line string) (pattern, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return pattern{}, false
	}
	var p pattern
	if strings.HasPrefix(line, "!") {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return pattern{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	var b strings.Builder
	b.WriteString("^")
	if !anchored && !strings.HasPrefix(line, "**/") {
		b.WriteString("(?:.*/)?")
	}
	if !globToRegexp(&b, line) {
		return pattern{}, false
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return pattern{}, false
	}
	p.re = re
	return p, true
}

// trimTrailingSpaces drops trailing spaces not escaped with a backslash.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// globToRegexp writes the regular expression of glob g to b.
func globToRegexp(b *strings.Builder, g string) bool {
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '*' && strings.HasPrefix(g[i:], "**"):
			atStart := i == 0 || g[i-1] == '/'
			rest := g[i+2:]
			switch {
			case atStart && strings.HasPrefix(rest, "/"):
				// "**/" (leading or in the middle): zero or more directories.
				b.WriteString("(?:.*/)?")
				i += 2
			case atStart && rest == "":
				// trailing "/**": everything inside.
				b.WriteString(".*")
				i++
			default:
				b.WriteString("[^/]*")
				i++
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := classEnd(g, i)
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : end]
			b.WriteString("[")
			if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
				b.WriteString("^")
				class = class[1:]
			}
			for j := 0; j < len(class); j++ {
				switch ch := class[j]; ch {
				case '\\', '[', ']', '^':
					b.WriteByte('\\')
					b.WriteByte(ch)
				default:
					b.WriteByte(ch)
				}
			}
			b.WriteString("]")
			i = end
		case c == '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(g[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	return true
}

// classEnd finds the "]" closing the class opened at g[i], or -1; a "]"
// right after "[" or "[!" is a member.
func classEnd(g string, i int) int {
	j := i + 1
	if j < len(g) && (g[j] == '!' || g[j] == '^') {
		j++
	}
	if j < len(g) && g[j] == ']' {
		j++
	}
	for ; j < len(g); j++ {
		if g[j] == ']' {
			return j
		}
	}
	return -1
}
