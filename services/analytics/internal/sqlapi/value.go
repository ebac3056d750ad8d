package sqlapi

import (
	"unicode/utf8"
)

// valueKind says how a column's PostgreSQL text output becomes its
// canonical string. Every query runs with TimeZone UTC, DateStyle ISO,
// IntervalStyle iso_8601, bytea_output hex and extra_float_digits 1, so the
// text output is stable; the kinds below only reshape what must be.
type valueKind int

const (
	kindText      valueKind = iota // as PostgreSQL prints it
	kindBool                       // t/f → true/false
	kindNumber                     // decimal text, as PostgreSQL prints it
	kindTimestamp                  // RFC 3339 in UTC: 2024-05-01T12:00:00.5Z
	kindJSON                       // json/jsonb text
	kindArray                      // a JSON array of the element kind
)

// column is one result column and how to print its values.
type column struct {
	name  string
	kind  valueKind
	elem  valueKind // for kindArray: the elements' kind
	delim byte      // for kindArray: the element separator (',' but ';' for box)
}

// Built-in type OIDs (pg_type.dat); values of other types are resolved
// through pg_type before the query runs.
var builtinKinds = map[uint32]valueKind{
	16: kindBool,
	20: kindNumber, 21: kindNumber, 23: kindNumber, 26: kindNumber, // int8 int2 int4 oid
	700: kindNumber, 701: kindNumber, 1700: kindNumber, // float4 float8 numeric
	1114: kindTimestamp, 1184: kindTimestamp,
	114: kindJSON, 3802: kindJSON,
	25: kindText, 1043: kindText, 1042: kindText, 19: kindText, 18: kindText, // text varchar bpchar name char
	2950: kindText, 1082: kindText, 1083: kindText, 1266: kindText, 1186: kindText, // uuid date time timetz interval
	17: kindText, 869: kindText, 650: kindText, 829: kindText, 3614: kindText, 3615: kindText, // bytea inet cidr macaddr tsvector tsquery
	142: kindText, 790: kindText, 2205: kindText, 2206: kindText, 705: kindText, 2249: kindText, // xml money regclass regtype unknown record
	28: kindText, 24: kindText, 3734: kindText, 4089: kindText, 4096: kindText, // xid regproc regconfig regnamespace regrole
}

// builtinArrays maps the built-in array type OIDs to their element kinds.
var builtinArrays = map[uint32]valueKind{
	1000: kindBool,
	1016: kindNumber, 1005: kindNumber, 1007: kindNumber, 1028: kindNumber,
	1021: kindNumber, 1022: kindNumber, 1231: kindNumber,
	1115: kindTimestamp, 1185: kindTimestamp,
	199: kindJSON, 3807: kindJSON,
	1009: kindText, 1015: kindText, 1014: kindText, 1003: kindText, 1002: kindText,
	2951: kindText, 1182: kindText, 1183: kindText, 1270: kindText, 1187: kindText,
	1001: kindText, 1041: kindText, 651: kindText, 1040: kindText, 3643: kindText, 3645: kindText,
	143: kindText, 791: kindText, 2210: kindText, 2211: kindText, 2287: kindText,
	1020: kindText, // box[]: its elements are separated by ';'
}

// builtinColumn returns how to print a built-in type, and false for a
// type that must be looked up.
func builtinColumn(oid uint32) (column, bool) {
	if k, ok := builtinKinds[oid]; ok {
		return column{kind: k}, true
	}
	if k, ok := builtinArrays[oid]; ok {
		c := column{kind: kindArray, elem: k, delim: ','}
		if oid == 1020 {
			c.delim = ';'
		}
		return c, true
	}
	return column{}, false
}

// appendValue appends the canonical string of the raw text value (nil is
// NULL, printed as "").
func (c *column) appendValue(dst, raw []byte) []byte {
	if raw == nil {
		return dst
	}
	switch c.kind {
	case kindBool:
		return appendBool(dst, raw)
	case kindTimestamp:
		return appendTimestamp(dst, raw)
	case kindArray:
		out, ok := appendArrayJSON(dst, raw, c.elem, c.delim)
		if !ok {
			return append(dst, raw...) // not an array literal we know: PostgreSQL's text
		}
		return out
	}
	return append(dst, raw...)
}

func appendBool(dst, raw []byte) []byte {
	switch string(raw) {
	case "t":
		return append(dst, "true"...)
	case "f":
		return append(dst, "false"...)
	}
	return append(dst, raw...)
}

// appendTimestamp turns PostgreSQL's ISO output in UTC
// ("2024-05-01 12:00:00.5+00", or without the offset for a timestamp
// without time zone) into RFC 3339 ("2024-05-01T12:00:00.5Z"). Values RFC
// 3339 cannot hold (infinity, years before 1 or after 9999, BC) keep
// PostgreSQL's text.
func appendTimestamp(dst, raw []byte) []byte {
	s := raw
	if len(s) < 19 || s[4] != '-' || s[10] != ' ' || s[len(s)-1] == 'C' { // "... BC"
		return append(dst, raw...)
	}
	if len(s) > 3 && string(s[len(s)-3:]) == "+00" {
		s = s[:len(s)-3]
	} else if hasOffset(s) {
		return append(dst, raw...) // not UTC: cannot happen with TimeZone UTC
	}
	dst = append(dst, s[:10]...)
	dst = append(dst, 'T')
	dst = append(dst, s[11:]...)
	return append(dst, 'Z')
}

// hasOffset reports whether an ISO timestamp ends with a zone offset.
func hasOffset(s []byte) bool {
	for i := len(s) - 1; i >= 19; i-- {
		switch s[i] {
		case '+', '-':
			return true
		}
	}
	return false
}

// appendArrayJSON turns PostgreSQL's array output ({1,2,NULL},
// {{"a b",c}}, [0:1]={x,y}) into JSON text: nested arrays, NULL as null,
// booleans and numbers as JSON literals (NaN and Infinity as strings),
// json elements as JSON, everything else as JSON strings in canonical form.
// Explicit lower bounds ([0:1]=) are dropped. It reports false when raw is
// not an array literal.
func appendArrayJSON(dst, raw []byte, elem valueKind, delim byte) ([]byte, bool) {
	s := raw
	if len(s) > 0 && s[0] == '[' { // dimension decoration
		eq := -1
		for i, c := range s {
			if c == '=' {
				eq = i
				break
			}
		}
		if eq < 0 {
			return dst, false
		}
		s = s[eq+1:]
	}
	p := arrayParser{s: s, delim: delim, elem: elem, out: dst}
	if !p.array() || p.i != len(p.s) {
		return dst, false
	}
	return p.out, true
}

type arrayParser struct {
	s       []byte
	i       int
	delim   byte
	elem    valueKind
	out     []byte
	scratch []byte
}

func (p *arrayParser) array() bool {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return false
	}
	p.i++
	p.out = append(p.out, '[')
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.out = append(p.out, ']')
		return true
	}
	for {
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case '{':
			if !p.array() {
				return false
			}
		case '"':
			if !p.quoted() {
				return false
			}
		default:
			if !p.bare() {
				return false
			}
		}
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case p.delim:
			p.i++
			p.out = append(p.out, ',')
		case '}':
			p.i++
			p.out = append(p.out, ']')
			return true
		default:
			return false
		}
	}
}

func (p *arrayParser) quoted() bool {
	p.i++ // opening quote
	p.scratch = p.scratch[:0]
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '\\':
			if p.i+1 >= len(p.s) {
				return false
			}
			p.scratch = append(p.scratch, p.s[p.i+1])
			p.i += 2
		case '"':
			p.i++
			p.element(p.scratch)
			return true
		default:
			p.scratch = append(p.scratch, c)
			p.i++
		}
	}
	return false
}

func (p *arrayParser) bare() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != p.delim && p.s[p.i] != '}' {
		if p.s[p.i] == '{' || p.s[p.i] == '"' {
			return false
		}
		p.i++
	}
	v := p.s[start:p.i]
	if len(v) == 0 {
		return false
	}
	if len(v) == 4 && (v[0]|0x20) == 'n' && (v[1]|0x20) == 'u' && (v[2]|0x20) == 'l' && (v[3]|0x20) == 'l' {
		p.out = append(p.out, "null"...)
		return true
	}
	p.element(v)
	return true
}

// element appends one non-null element in its JSON form.
func (p *arrayParser) element(v []byte) {
	switch p.elem {
	case kindBool:
		switch string(v) {
		case "t":
			p.out = append(p.out, "true"...)
			return
		case "f":
			p.out = append(p.out, "false"...)
			return
		}
	case kindNumber:
		if isJSONNumber(v) {
			p.out = append(p.out, v...)
			return
		}
	case kindJSON:
		p.out = append(p.out, v...)
		return
	case kindTimestamp:
		var ts [64]byte
		p.out = appendJSONString(p.out, appendTimestamp(ts[:0], v))
		return
	}
	p.out = appendJSONString(p.out, v)
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendTSV appends s with TSV's escapes: backslash, tab, newline and
// carriage return become \\, \t, \n and \r; nothing else changes.
func appendTSV(dst, s []byte) []byte {
	start := 0
	for i, c := range s {
		var esc byte
		switch c {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, '\\', esc)
		start = i + 1
	}
	return append(dst, s[start:]...)
}
