package journal

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Commit kinds, in the Shadow-Kind trailer.
const (
	KindBaseline = "baseline" // the tree at a turn's start differed from the branch
	KindTurn     = "turn"     // a turn's changes, at its end
	KindUndo     = "undo"     // POST /api/shadow/undo
	KindRestore  = "restore"  // POST /api/shadow/restore
	KindSnapshot = "snapshot" // user changes saved before an undo or restore
)

// Trailer keys of a journal commit message.
const (
	trailerKind    = "Shadow-Kind"
	trailerSession = "Shadow-Session"
	trailerTurn    = "Shadow-Turn"
	trailerTurnID  = "Shadow-Turn-Id"
	trailerUndoes  = "Shadow-Undoes"
)

// Bounds of a commit message.
const (
	maxSubjectRunes = 72
	maxListedFiles  = 200
)

// message is what a journal commit's message carries.
type message struct {
	Kind      string
	Session   string
	Turn      int
	TurnID    string
	Prompt    string // the prompt; only its first line is used
	Undoes    string // for an undo: the turn commit undone
	Note      string // an extra paragraph
	Changes   []Change
	Skipped   []Skipped
	MaxFileMB int
}

// subject is the message's first line.
func (m message) subject() string {
	var s string
	switch m.Kind {
	case KindTurn:
		s = fmt.Sprintf("turn %d", m.Turn)
	case KindBaseline:
		s = fmt.Sprintf("baseline before turn %d", m.Turn)
	case KindUndo:
		s = fmt.Sprintf("undo turn %d", m.Turn)
	case KindRestore:
		s = "restore"
	default:
		s = "snapshot"
	}
	if p := firstLine(m.Prompt); p != "" {
		s += ": " + p
	}
	return truncateRunes(s, maxSubjectRunes)
}

// String renders the message: subject, prompt line, changed and skipped
// files, then the trailers (the last paragraph, readable with
// git log --format=%(trailers)).
func (m message) String() string {
	var b strings.Builder
	b.WriteString(m.subject() + "\n\n")
	if p := firstLine(m.Prompt); p != "" {
		fmt.Fprintf(&b, "Prompt: %s\n\n", p)
	}
	if m.Note != "" {
		b.WriteString(m.Note + "\n\n")
	}
	if len(m.Changes) > 0 {
		b.WriteString("Changed files:\n")
		for i, c := range m.Changes {
			if i == maxListedFiles {
				fmt.Fprintf(&b, "... and %d more\n", len(m.Changes)-maxListedFiles)
				break
			}
			fmt.Fprintf(&b, "%s %s\n", c.Status, c.Path)
		}
		b.WriteString("\n")
	}
	if len(m.Skipped) > 0 {
		b.WriteString("Skipped files:\n")
		for i, s := range m.Skipped {
			if i == maxListedFiles {
				fmt.Fprintf(&b, "... and %d more\n", len(m.Skipped)-maxListedFiles)
				break
			}
			switch s.Reason {
			case ReasonTooLarge:
				fmt.Fprintf(&b, "%s (%d bytes, over %d MB)\n", s.Path, s.Size, m.MaxFileMB)
			case ReasonPrivate:
				fmt.Fprintf(&b, "%s (a link to one of svc-code's secret files)\n", s.Path)
			default:
				fmt.Fprintf(&b, "%s (nested git repository)\n", s.Path)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s: %s\n", trailerKind, m.Kind)
	if m.Session != "" {
		fmt.Fprintf(&b, "%s: %s\n", trailerSession, m.Session)
	}
	if m.Turn > 0 {
		fmt.Fprintf(&b, "%s: %d\n", trailerTurn, m.Turn)
	}
	if m.TurnID != "" {
		fmt.Fprintf(&b, "%s: %s\n", trailerTurnID, oneLine(m.TurnID))
	}
	if m.Undoes != "" {
		fmt.Fprintf(&b, "%s: %s\n", trailerUndoes, oneLine(m.Undoes))
	}
	return b.String()
}

// Trailers are the Shadow-* trailers of a journal commit.
type Trailers struct {
	Kind    string `json:"kind,omitempty"`
	Session string `json:"session_id,omitempty"`
	Turn    int    `json:"turn_number,omitempty"`
	TurnID  string `json:"turn_id,omitempty"`
	Undoes  string `json:"undoes,omitempty"`
}

// parseTrailers reads the output of %(trailers:only,unfold).
func parseTrailers(s string) Trailers {
	var t Trailers
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case trailerKind:
			t.Kind = v
		case trailerSession:
			t.Session = v
		case trailerTurn:
			t.Turn, _ = strconv.Atoi(v)
		case trailerTurnID:
			t.TurnID = v
		case trailerUndoes:
			t.Undoes = v
		}
	}
	return t
}

// oneLine makes a trailer value of s: control characters (line breaks
// above all, which would add trailers) become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
