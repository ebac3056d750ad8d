package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// rgArgs pins ripgrep to the rules the Go walk follows, whatever the
// user's ripgrep configuration: no config file, hidden files searched,
// only .gitignore files (no global excludes, .ignore, .rgignore or
// .git/info/exclude), path order, the same size limit.
func rgArgs(q Query) []string {
	args := []string{
		"--json", "--no-config", "--hidden", "--no-ignore-global", "--no-ignore-dot",
		"--no-ignore-exclude", "--no-follow", "--sort", "path",
		"--max-filesize", strconv.Itoa(MaxFileSize), "--max-columns", "0",
	}
	if !q.Regex {
		args = append(args, "--fixed-strings")
	}
	if q.ignoreCase() {
		args = append(args, "--ignore-case")
	} else {
		args = append(args, "--case-sensitive")
	}
	for _, l := range q.overrideLines() {
		args = append(args, "--glob", l)
	}
	return append(args, "--regexp", q.Pattern, "--", ".")
}

// rgEvent is the part of ripgrep's --json lines the search reads.
type rgEvent struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
		Submatches []struct {
			Start int `json:"start"`
		} `json:"submatches"`
	} `json:"data"`
}

// rgText is ripgrep's arbitrary data: text, or base64 bytes when it is not
// valid UTF-8.
type rgText struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (t rgText) String() string {
	if t.Text != nil {
		return *t.Text
	}
	if t.Bytes != nil {
		if b, err := base64.StdEncoding.DecodeString(*t.Bytes); err == nil {
			return string(b)
		}
	}
	return ""
}

func searchRg(ctx context.Context, rg string, q Query) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, rg, rgArgs(q)...) //nolint:gosec // rg is the ripgrep found on PATH; the pattern is passed after --regexp
	cmd.Dir = q.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("ripgrep: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start ripgrep: %w", err)
	}
	res := Result{Matches: []Match{}, Engine: EngineRipgrep}
	sc := bufio.NewScanner(stdout)
	// One line of a file can be the whole file, and JSON escaping can make
	// a byte six (\u001b): room for the worst case, allocated only if needed.
	sc.Buffer(make([]byte, 0, 64<<10), 7*MaxFileSize)
	var parseErr error
	// The privacy of the file of the last match: a file's matches come
	// together.
	lastPath, lastPrivate := "", false
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{"type":"match"`)) {
			continue
		}
		var ev rgEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			parseErr = fmt.Errorf("ripgrep output: %w", err)
			break
		}
		rel := strings.TrimPrefix(ev.Data.Path.String(), "./")
		abs := filepath.Join(q.Root, rel)
		if q.Private != nil {
			if abs != lastPath {
				lastPath, lastPrivate = abs, q.Private(abs, false)
			}
			if lastPrivate {
				continue
			}
		}
		if len(res.Matches) == q.MaxResults {
			res.Truncated = true
			break
		}
		col := 1
		if len(ev.Data.Submatches) > 0 {
			col = ev.Data.Submatches[0].Start + 1
		}
		res.Matches = append(res.Matches, Match{
			Path:   abs,
			Line:   ev.Data.LineNumber,
			Column: col,
			Text:   cutLine(ev.Data.Lines.String()),
		})
	}
	if err := sc.Err(); err != nil && parseErr == nil {
		parseErr = fmt.Errorf("read ripgrep output: %w", err)
	}
	if res.Truncated || parseErr != nil {
		cancel() // enough read: stop ripgrep
	}
	waitErr := cmd.Wait()
	if parseErr != nil {
		return Result{}, parseErr
	}
	if res.Truncated {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("ripgrep: %w", err)
	}
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exit) && exit.ExitCode() == 1: // no match
	case errors.As(waitErr, &exit) && exit.ExitCode() == 2:
		// 2 is any error, files it could not read included: only a
		// refused pattern or glob fails the search.
		msg := stderr.String()
		if strings.Contains(msg, "regex parse error") || strings.Contains(msg, "error parsing glob") {
			return Result{}, fmt.Errorf("%w: %s", ErrInvalid, firstLines(msg, 6))
		}
	default:
		return Result{}, fmt.Errorf("ripgrep: %w: %s", waitErr, firstLines(stderr.String(), 3))
	}
	return res, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(len(lines), n)], "\n")
}
