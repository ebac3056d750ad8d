package sqlapi

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokenKind classifies a token of PostgreSQL's lexical grammar, as far as
// the validator needs it.
type tokenKind int

const (
	tokIdent        tokenKind = iota // unquoted identifier or keyword, lowercased
	tokQuotedIdent                   // "..." with "" escapes; Text holds the name
	tokString                        // '...', E'...', B'...', X'...', N'...'
	tokDollarString                  // $tag$...$tag$
	tokNumber                        // 1, 1.5, .5, 1e10
	tokParam                         // $1
	tokSemicolon                     // ;
	tokPunct                         // ( ) [ ] , . : ::
	tokOperator                      // + - * / < > = ~ ! @ # % ^ & | ` ?
)

func (k tokenKind) String() string {
	switch k {
	case tokIdent:
		return "identifier"
	case tokQuotedIdent:
		return "quoted identifier"
	case tokString:
		return "string"
	case tokDollarString:
		return "dollar-quoted string"
	case tokNumber:
		return "number"
	case tokParam:
		return "parameter"
	case tokSemicolon:
		return "semicolon"
	case tokPunct:
		return "punctuation"
	case tokOperator:
		return "operator"
	}
	return fmt.Sprintf("token(%d)", int(k))
}

// token is one lexical token. Comments and white space are dropped.
type token struct {
	Kind tokenKind
	// Text is the token as the validator compares it: an unquoted
	// identifier lowercased, a quoted identifier's name without its quotes,
	// anything else as written.
	Text string
	// Pos is the byte offset of the token in the input.
	Pos int
}

// errLex is wrapped by every tokenizer error.
var errLex = errors.New("cannot tokenize")

// tokenize splits sql into tokens the way PostgreSQL's lexer does with
// standard_conforming_strings on (the executor sets it for every query):
// -- line comments and nested /* */ block comments are skipped, '...' with
// doubled-quote escapes, E'...' with backslash escapes, $tag$...$tag$ bodies and
// "..." identifiers are single tokens. Anything it cannot read in the same
// way as the server (an unterminated string, comment or identifier, a NUL
// byte, invalid UTF-8, Unicode-escape U&'...' and U&"..." forms) is an
// error, so that the validator never guesses.
func tokenize(sql string) ([]token, error) {
	if !utf8.ValidString(sql) {
		return nil, fmt.Errorf("%w: the SQL is not valid UTF-8", errLex)
	}
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return nil, fmt.Errorf("%w: NUL byte at offset %d", errLex, i)
	}
	var toks []token
	s := sql
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			j := strings.IndexAny(s[i:], "\n\r")
			if j < 0 {
				i = len(s)
			} else {
				i += j + 1
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end, err := skipBlockComment(s, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '\'':
			end, err := scanQuoted(s, i, i+1, false)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{Kind: tokString, Text: s[i:end], Pos: i})
			i = end
		case (c == 'e' || c == 'E') && i+1 < len(s) && s[i+1] == '\'':
			end, err := scanQuoted(s, i, i+2, true)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{Kind: tokString, Text: s[i:end], Pos: i})
			i = end
		case (c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && i+1 < len(s) && s[i+1] == '\'':
			end, err := scanQuoted(s, i, i+2, false)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{Kind: tokString, Text: s[i:end], Pos: i})
			i = end
		case (c == 'u' || c == 'U') && i+2 < len(s) && s[i+1] == '&' && (s[i+2] == '\'' || s[i+2] == '"'):
			return nil, fmt.Errorf("%w: Unicode-escape strings and identifiers (U&'...', U&\"...\") are not accepted (offset %d)", errLex, i)
		case c == '"':
			name, end, err := scanQuotedIdent(s, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{Kind: tokQuotedIdent, Text: name, Pos: i})
			i = end
		case c == '$':
			switch {
			case i+1 < len(s) && isDigit(s[i+1]):
				j := i + 1
				for j < len(s) && isDigit(s[j]) {
					j++
				}
				toks = append(toks, token{Kind: tokParam, Text: s[i:j], Pos: i})
				i = j
			default:
				end, err := scanDollar(s, i)
				if err != nil {
					return nil, err
				}
				toks = append(toks, token{Kind: tokDollarString, Text: s[i:end], Pos: i})
				i = end
			}
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentCont(s[j]) {
				j++
			}
			toks = append(toks, token{Kind: tokIdent, Text: strings.ToLower(s[i:j]), Pos: i})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			j := scanNumber(s, i)
			toks = append(toks, token{Kind: tokNumber, Text: s[i:j], Pos: i})
			i = j
		case c == ';':
			toks = append(toks, token{Kind: tokSemicolon, Text: ";", Pos: i})
			i++
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			toks = append(toks, token{Kind: tokPunct, Text: "::", Pos: i})
			i += 2
		case strings.IndexByte("()[],.:", c) >= 0:
			toks = append(toks, token{Kind: tokPunct, Text: s[i : i+1], Pos: i})
			i++
		case isOperatorChar(c):
			j := i + 1
			// An operator ends where a comment starts, as in PostgreSQL.
			for j < len(s) && isOperatorChar(s[j]) &&
				!startsComment(s, j) {
				j++
			}
			toks = append(toks, token{Kind: tokOperator, Text: s[i:j], Pos: i})
			i = j
		default:
			return nil, fmt.Errorf("%w: unexpected character %q at offset %d", errLex, c, i)
		}
	}
	return toks, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentStart: PostgreSQL's ident_start, letters, '_' and every byte of a
// multi-byte character.
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isIdentCont: ident_cont, which adds digits and '$'.
func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

// startsComment reports whether a -- or /* comment starts at s[i].
func startsComment(s string, i int) bool {
	return i+1 < len(s) && (s[i] == '-' && s[i+1] == '-' || s[i] == '/' && s[i+1] == '*')
}

func isOperatorChar(c byte) bool { return strings.IndexByte("+-*/<>=~!@#%^&|`?\\", c) >= 0 }

// skipBlockComment returns the offset after the block comment opening at
// start; block comments nest.
func skipBlockComment(s string, start int) (int, error) {
	depth := 0
	i := start
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, nil
			}
		default:
			i++
		}
	}
	return 0, fmt.Errorf("%w: unterminated /* comment at offset %d", errLex, start)
}

// scanQuoted returns the offset after a '...' literal whose body starts at
// body (start is where its prefix begins). A doubled quote is a quote inside; with
// backslashes, \x escapes the next character as in E'...'. Like
// PostgreSQL, it reads on through continuations: a quote that follows
// the closing one across white space holding a newline (and -- comments)
// continues the same literal, with the same escapes ('a'\n'b' is 'ab',
// and the continued part of an E'...' keeps backslash escapes).
func scanQuoted(s string, start, body int, backslashes bool) (int, error) {
	for {
		end, err := scanQuotedPart(s, start, body, backslashes)
		if err != nil {
			return 0, err
		}
		next, ok := quoteContinues(s, end)
		if !ok {
			return end, nil
		}
		body = next + 1
	}
}

// quoteContinues reports whether a string literal that ended at s[i]
// continues, as PostgreSQL's quotecontinue rule reads it: horizontal
// white space or -- comments, at least one newline, then white space or
// -- comments, then a quote; it returns the offset of that quote.
func quoteContinues(s string, i int) (int, bool) {
	newline := false
	for i < len(s) {
		switch c := s[i]; {
		case c == '\n' || c == '\r':
			newline = true
			i++
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			j := strings.IndexAny(s[i:], "\n\r")
			if j < 0 {
				return 0, false
			}
			i += j
		case c == '\'' && newline:
			return i, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// scanQuotedPart returns the offset after one quoted part (without
// continuations) whose body starts at body.
func scanQuotedPart(s string, start, body int, backslashes bool) (int, error) {
	i := body
	for i < len(s) {
		switch s[i] {
		case '\\':
			if backslashes {
				i += 2
				continue
			}
			i++
		case '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1, nil
		default:
			i++
		}
	}
	return 0, fmt.Errorf("%w: unterminated string literal at offset %d", errLex, start)
}

// scanQuotedIdent reads "..." at start ("" is a quote inside) and returns
// the name and the offset after it.
func scanQuotedIdent(s string, start int) (string, int, error) {
	var b strings.Builder
	i := start + 1
	for i < len(s) {
		if s[i] == '"' {
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i += 2
				continue
			}
			if b.Len() == 0 {
				return "", 0, fmt.Errorf("%w: zero-length quoted identifier at offset %d", errLex, start)
			}
			return b.String(), i + 1, nil
		}
		b.WriteByte(s[i])
		i++
	}
	return "", 0, fmt.Errorf("%w: unterminated quoted identifier at offset %d", errLex, start)
}

// scanDollar reads a dollar-quoted string $tag$...$tag$ at start and
// returns the offset after it. A '$' that does not open a valid tag is an
// error: PostgreSQL would not read it as an operator either.
func scanDollar(s string, start int) (int, error) {
	j := start + 1
	if j < len(s) && s[j] != '$' {
		if !isIdentStart(s[j]) {
			return 0, fmt.Errorf("%w: stray '$' at offset %d", errLex, start)
		}
		for j < len(s) && s[j] != '$' {
			if !isIdentStart(s[j]) && !isDigit(s[j]) {
				return 0, fmt.Errorf("%w: stray '$' at offset %d", errLex, start)
			}
			j++
		}
	}
	if j >= len(s) {
		return 0, fmt.Errorf("%w: stray '$' at offset %d", errLex, start)
	}
	tag := s[start : j+1]
	k := strings.Index(s[j+1:], tag)
	if k < 0 {
		return 0, fmt.Errorf("%w: unterminated dollar-quoted string %s at offset %d", errLex, tag, start)
	}
	return j + 1 + k + len(tag), nil
}

// scanNumber returns the offset after the numeric literal at start. It
// takes digits, one '.', and an exponent; letters after it start a new
// token (so "1update" is the number 1 and the identifier update, never a
// hidden keyword).
func scanNumber(s string, start int) int {
	j := start
	for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j < len(s) && s[j] == '.' && (j+1 >= len(s) || s[j+1] != '.') {
		j++
		for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}
