package search

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// prefilter rejects most files that cannot match before any regular
// expression runs: a literal the match must contain, found with
// bytes.Index (ASCII case-folded for a case-insensitive search).
type prefilter struct {
	needle []byte
	fold   bool
}

// minNeedle: shorter literals are not worth a pass of their own.
const minNeedle = 3

// prefilterOf is q's prefilter, or nil. For a literal search the needle is
// the pattern itself; a case-insensitive one keeps the longest run of
// characters whose case variants are all ASCII (so "k", which U+212A KELVIN
// SIGN folds to, and every non-ASCII character end a run).
func (q Query) prefilterOf() *prefilter {
	if q.Regex {
		return nil
	}
	if !q.ignoreCase() {
		return &prefilter{needle: []byte(q.Pattern)}
	}
	var best, cur []byte
	for _, r := range q.Pattern {
		if !asciiFoldOnly(r) {
			cur = nil
			continue
		}
		cur = utf8.AppendRune(cur, unicode.ToLower(r)) // ASCII: one byte
		if len(cur) > len(best) {
			best = append(best[:0], cur...)
		}
	}
	if len(best) < minNeedle {
		return nil
	}
	return &prefilter{needle: best, fold: true}
}

// asciiFoldOnly reports whether r and every character it folds to are
// ASCII.
func asciiFoldOnly(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// pass reports whether data may hold a match; scratch is reused.
func (p *prefilter) pass(data []byte, scratch *[]byte) bool {
	if !p.fold {
		return bytes.Contains(data, p.needle)
	}
	low := append((*scratch)[:0], data...)
	for i, c := range low {
		if 'A' <= c && c <= 'Z' {
			low[i] = c + 'a' - 'A'
		}
	}
	*scratch = low
	return bytes.Contains(low, p.needle)
}
