// Package safename cleans the name of an uploaded file into one safe to
// create on disk: chat's uploads and shadow's file upload use the same rule.
package safename

import (
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns name's last path element (either slash) with letters,
// digits, space and . _ - + ( ) , kept and anything else replaced by '_',
// no leading or trailing dots or spaces, at most maxBytes bytes (the
// extension kept when it is at most 16 bytes, never a split character);
// "file" when nothing but underscores is left.
func Clean(name string, maxBytes int) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune(" ._-+(),", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name = strings.TrimRight(strings.TrimLeft(b.String(), ". "), ". ")
	if len(name) > maxBytes {
		ext := filepath.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxBytes-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	if name == "" || strings.Trim(name, "_") == "" {
		return "file"
	}
	return name
}
