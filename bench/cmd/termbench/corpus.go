package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

// words make the generated text look like source code and logs: varied
// printable ASCII, spaces, punctuation, digits, lines of many lengths.
var words = []string{
	"func", "return", "if", "err", "!=", "nil", "{", "}", "ctx,", "cancel", ":=", "context.WithTimeout(",
	"the", "terminal", "gateway", "session", "output", "bytes", "WARN", "INFO", "level=debug", "msg=\"listening\"",
	"for", "range", "i++", "0x1f", "3.14159", "[]byte", "map[string]int", "//", "TODO:", "#include", "<stdio.h>",
	"SELECT", "*", "FROM", "turns", "WHERE", "id", "=", "42;", "GET", "/api/sessions", "HTTP/1.1", "200", "OK",
	"lorem", "ipsum", "dolor", "sit", "amet,", "consectetur", "adipiscing", "elit.", "(a,", "b)", "=>", "a+b",
	"~/.svc-code/projects", "$HOME", "--flag=value", "@decorator", "async", "await", "let", "const", "x",
}

// writeCorpus writes size bytes of generated text to path: lines of 0 to
// about 160 printable ASCII characters, each ending in a newline. The
// same seed gives the same file.
func writeCorpus(path string, size int64, seed uint64) (lines int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) //nolint:gosec // G404: test data, not secrets
	line := make([]byte, 0, 256)
	var written int64
	for written < size {
		line = line[:0]
		width := r.IntN(160)
		if r.IntN(10) == 0 {
			width = 0 // blank lines too
		}
		if r.IntN(4) == 0 {
			line = append(line, "    "[:r.IntN(5)]...) // indentation
		}
		for len(line) < width {
			if len(line) > 0 {
				line = append(line, ' ')
			}
			if r.IntN(8) == 0 {
				line = strconv.AppendInt(line, r.Int64N(1_000_000), 10)
			} else {
				line = append(line, words[r.IntN(len(words))]...)
			}
		}
		line = append(line, '\n')
		if rest := size - written; int64(len(line)) > rest {
			line = line[:rest]
			if rest > 0 {
				line[rest-1] = '\n'
			}
		}
		if _, err := w.Write(line); err != nil {
			return 0, fmt.Errorf("write %s: %w", path, err)
		}
		written += int64(len(line))
		lines++
	}
	return lines, w.Flush()
}
