// Package vtscreen keeps a terminal's screen on the server: a VT emulator
// (github.com/charmbracelet/x/vt) fed the terminal's output, and Serialize,
// which writes escape sequences that reproduce the screen and its modes on
// a freshly reset terminal of the same size (xterm.js after term.reset()).
//
// The emulator reports neither its modes nor the main screen while the
// alternate one is shown, so this package follows them itself: the mode
// callbacks, the title callback, and handlers that run before the
// emulator's own for DECSTBM (the scroll region), DECSET of an alternate
// screen (a copy of the main screen is taken just before it is replaced)
// and RIS. Replies the emulator would send to the application (device
// attributes, cursor position reports) are dropped: the browser's terminal
// answers them.
//
// What is not reproduced: the current SGR pen and hyperlink (the emulator
// keeps them private; the screen's cells carry their own attributes), the
// character sets (G0-G3), tab stops, the saved cursor, and a pending wrap
// at the right margin. Applications that draw full screens set these as
// they draw.
//
// A Screen is not safe for concurrent use; its owner serialises access.
package vtscreen

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// Screen is one terminal's emulated screen.
type Screen struct {
	emu   *vt.Emulator
	modes map[ansi.Mode]bool // the last setting of every mode that changed since the last reset
	title string
	// top and bottom are the scroll region (1-based, inclusive); zero
	// when it is the whole screen.
	top, bottom int
	// altMode is the DEC mode that switched to the alternate screen, and
	// main the main screen as it was then (with its cursor).
	altMode int
	main    []uv.Line
	mainCur uv.Position
	// st is the escape-sequence state after the bytes written so far (a
	// tracker of its own, for the plain-text fast path).
	st parseState
	// skipped counts bytes the fast path did not have to emulate.
	skipped int64
	sgr     []byte // scratch: the SGR sequences of a skipped span
}

// New returns a blank screen of rows×cols.
func New(rows, cols int) *Screen {
	s := &Screen{emu: vt.NewEmulator(cols, rows), modes: map[ansi.Mode]bool{}}
	// Nothing reads the emulator's replies: a closed pipe drops them
	// instead of blocking the writer.
	if pw, ok := s.emu.InputPipe().(*io.PipeWriter); ok {
		_ = pw.Close()
	}
	// The emulator's own history is not needed (the ring holds the
	// output); keeping one line makes each scroll cheap.
	s.emu.SetScrollbackSize(1)
	s.emu.SetCallbacks(vt.Callbacks{
		Title:       func(t string) { s.title = t },
		EnableMode:  func(m ansi.Mode) { s.modes[m] = true },
		DisableMode: func(m ansi.Mode) { s.modes[m] = false },
	})
	s.emu.RegisterCsiHandler('r', func(p ansi.Params) bool {
		top, _, _ := p.Param(0, 1)
		bottom, _, _ := p.Param(1, s.emu.Height())
		top = max(top, 1)
		if bottom < 1 {
			bottom = s.emu.Height()
		}
		if top < bottom {
			s.top, s.bottom = top, bottom
			if top == 1 && bottom == s.emu.Height() {
				s.top, s.bottom = 0, 0
			}
		}
		return false // the emulator's handler does the rest
	})
	s.emu.RegisterCsiHandler(ansi.Command('?', 0, 'h'), func(p ansi.Params) bool {
		if s.emu.IsAltScreen() {
			return false
		}
		for _, q := range p {
			switch m := q.Param(-1); m {
			case 47, 1047, 1049:
				s.altMode = m
				s.main, s.mainCur = s.lines(), s.emu.CursorPosition()
			}
		}
		return false
	})
	s.emu.RegisterEscHandler('c', func() bool {
		s.title, s.top, s.bottom, s.main = "", 0, 0, nil
		clear(s.modes)
		return false
	})
	return s
}

// Write feeds output to the emulator.
//
// Emulating every character costs about as much as the rest of the
// terminal service together (the emulator copies each line's cells on
// every scroll), so Write takes a shortcut that leaves the screen as it
// would be: in a run of plain text (printable characters, tabs, CR, LF,
// BEL and SGR sequences, starting outside any escape sequence) that holds
// more than twice the screen's height in line feeds, all but the last
// 2×rows+1 lines (rows+1 when the cursor is on the bottom line, where
// every line feed scrolls) would scroll off the screen, so only the SGR
// sequences of the front of the run are fed (the pen must end up the
// same), then its last lines. Every line on the screen afterwards was
// blank when the tail started writing it. The shortcut is off while a scroll region or
// left/right margins are set.
func (s *Screen) Write(p []byte) {
	rows := s.emu.Height()
	fed := 0
	for i := 0; i < len(p); {
		if s.st != stGround {
			s.st = s.st.next(p[i])
			i++
			continue
		}
		end, lfs := plainRun(p, i)
		if end == i {
			s.st = s.st.next(p[i])
			i++
			continue
		}
		if lfs > 2*rows+1 {
			// What came before may set a scroll region: feed it first.
			_, _ = s.emu.Write(p[fed:i])
			fed = i
			// With the cursor on the bottom line, every line feed
			// scrolls: the last rows+1 lines are enough.
			keep := 2*rows + 1
			if s.emu.CursorPosition().Y == rows-1 {
				keep = rows + 1
			}
			if s.top == 0 && !s.modes[ansi.ModeLeftRightMargin] {
				cut := nthLF(p[i:end], lfs-keep) + i + 1 // after the (lfs-keep)-th line feed
				s.sgr = appendSGR(s.sgr[:0], p[i:cut])
				_, _ = s.emu.Write(s.sgr)
				s.skipped += int64(cut - i - len(s.sgr))
				fed = cut
			}
		}
		i = end
	}
	_, _ = s.emu.Write(p[fed:])
	if s.main != nil && !s.emu.IsAltScreen() {
		s.main = nil // back on the main screen: the copy is stale
	}
}

// Skipped is how many bytes the plain-text shortcut did not emulate.
func (s *Screen) Skipped() int64 { return s.skipped }

// plainByte marks the bytes of plain text: printable (UTF-8 included),
// tab, CR, LF, BEL.
var plainByte = func() (t [256]bool) {
	for b := range 256 {
		t[b] = (b >= 0x20 && b != 0x7f) || b == '\r' || b == '\n' || b == '\t' || b == 0x07
	}
	return t
}()

// plainRun returns the end of the run of plain text starting at i (i
// when p[i] does not start one) and the number of line feeds in it.
// An SGR sequence cut by the end of p ends the run before it.
func plainRun(p []byte, i int) (end, lfs int) {
	start := i
	for i < len(p) {
		if plainByte[p[i]] {
			i++
			continue
		}
		if n := sgrLen(p[i:]); n > 0 {
			i += n
			continue
		}
		break
	}
	return i, bytes.Count(p[start:i], []byte{'\n'})
}

// sgrLen is the length of the SGR sequence (CSI digits ; : m) p starts
// with, 0 if it does not start with a complete one.
func sgrLen(p []byte) int {
	if len(p) < 3 || p[0] != 0x1b || p[1] != '[' {
		return 0
	}
	for i := 2; i < len(p) && i < 64; i++ {
		switch b := p[i]; {
		case b == 'm':
			return i + 1
		case b >= '0' && b <= '9', b == ';', b == ':':
		default:
			return 0
		}
	}
	return 0
}

// nthLF is the index of the n-th line feed in p (n >= 1).
func nthLF(p []byte, n int) int {
	off := 0
	for {
		j := bytes.IndexByte(p[off:], '\n')
		if j < 0 {
			return len(p) - 1
		}
		if n--; n == 0 {
			return off + j
		}
		off += j + 1
	}
}

// appendSGR appends the SGR sequences found in the plain run p, from the
// last full reset (ESC [ m or ESC [ 0 m) on: what came before it no
// longer shows in the pen.
func appendSGR(dst, p []byte) []byte {
	base := len(dst)
	for {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			return dst
		}
		n := max(sgrLen(p[i:]), 1)
		if n > 1 {
			if seq := p[i : i+n]; string(seq) == "\x1b[m" || string(seq) == "\x1b[0m" {
				dst = dst[:base]
			}
			dst = append(dst, p[i:i+n]...)
		}
		p = p[i+n:]
	}
}

// parseState follows escape sequences as a terminal's parser does, to
// know where plain text starts.
type parseState uint8

const (
	stGround parseState = iota
	stEsc
	stEscInter
	stCSI
	stString    // OSC, DCS, SOS, PM, APC: until BEL or ST
	stStringEsc // ESC inside a string: ST if '\\' follows
)

func (st parseState) next(b byte) parseState {
	if b == 0x18 || b == 0x1a { // CAN, SUB
		return stGround
	}
	switch st {
	case stGround:
		if b == 0x1b {
			return stEsc
		}
	case stEsc:
		switch {
		case b == '[':
			return stCSI
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			return stString
		case b >= 0x20 && b <= 0x2f:
			return stEscInter
		case b >= 0x30 && b <= 0x7e:
			return stGround
		}
	case stEscInter:
		if b >= 0x30 && b <= 0x7e {
			return stGround
		}
		if b == 0x1b {
			return stEsc
		}
	case stCSI:
		if b >= 0x40 && b <= 0x7e {
			return stGround
		}
		if b == 0x1b {
			return stEsc
		}
	case stString:
		if b == 0x07 {
			return stGround
		}
		if b == 0x1b {
			return stStringEsc
		}
	case stStringEsc:
		if b == '\\' {
			return stGround
		}
		return stEsc.next(b)
	}
	return st
}

// Resize changes the screen's size, as a terminal resize does.
func (s *Screen) Resize(rows, cols int) {
	if rows == s.emu.Height() && cols == s.emu.Width() {
		return
	}
	s.emu.Resize(cols, rows)
	s.top, s.bottom = 0, 0 // xterm resets the scroll region on resize
}

// Size is the screen's size.
func (s *Screen) Size() (rows, cols int) { return s.emu.Height(), s.emu.Width() }

// Emulator is the underlying emulator (tests read its cells).
func (s *Screen) Emulator() *vt.Emulator { return s.emu }

func (s *Screen) lines() []uv.Line {
	h, w := s.emu.Height(), s.emu.Width()
	out := make([]uv.Line, h)
	for y := range h {
		l := make(uv.Line, w)
		for x := range w {
			if c := s.emu.CellAt(x, y); c != nil {
				l[x] = *c
			}
		}
		out[y] = l
	}
	return out
}

// modes written by Serialize in the generic way, with their reset
// defaults (true: set after a reset). The alternate screen, the cursor's
// visibility, origin mode and the keypad are written apart.
var genericModes = []struct {
	mode ansi.Mode
	def  bool
}{
	{ansi.ModeCursorKeys, false},
	{ansi.ModeAutoWrap, true},
	{ansi.ModeMouseX10, false},
	{ansi.ModeMouseNormal, false},
	{ansi.ModeMouseHighlight, false},
	{ansi.ModeMouseButtonEvent, false},
	{ansi.ModeMouseAnyEvent, false},
	{ansi.ModeFocusEvent, false},
	{ansi.ModeMouseExtUtf8, false},
	{ansi.ModeMouseExtSgr, false},
	{ansi.ModeMouseExtUrxvt, false},
	{ansi.ModeMouseExtSgrPixel, false},
	{ansi.ModeBracketedPaste, false},
	{ansi.ModeInsertReplace, false},
	{ansi.ModeLineFeedNewLine, false},
	{ansi.DECMode(5), false}, // reverse video
}

// Serialize writes, for a freshly reset terminal of the same size, the
// escape sequences that reproduce the screen: the main screen's lines
// (and, when an application shows the alternate screen, the switch to it
// and its lines), with colours and attributes; the scroll region; the
// modes that differ from a reset terminal's (cursor keys, keypad, mouse
// tracking and encodings, focus events, bracketed paste, auto-wrap,
// insert, origin, reverse video); the title; the cursor's style,
// position and visibility.
func (s *Screen) Serialize() []byte {
	var b strings.Builder
	if s.emu.IsAltScreen() && s.main != nil {
		writeLines(&b, s.main, s.emu.Height(), s.emu.Width())
		cup(&b, s.mainCur.Y+1, s.mainCur.X+1)
		b.WriteString("\x1b[?" + strconv.Itoa(s.altMode) + "h")
	} else if s.emu.IsAltScreen() {
		b.WriteString("\x1b[?1049h")
	}
	lines := s.lines()
	writeLines(&b, lines, s.emu.Height(), s.emu.Width())
	padToCursor(&b, lines, s.emu.CursorPosition(), s.emu.Width())
	if s.top > 0 {
		b.WriteString("\x1b[" + strconv.Itoa(s.top) + ";" + strconv.Itoa(s.bottom) + "r")
	}
	for _, m := range genericModes {
		if on, ok := s.modes[m.mode]; ok && on != m.def {
			writeMode(&b, m.mode, on)
		}
	}
	if s.modes[ansi.ModeNumericKeypad] {
		b.WriteString("\x1b=") // DECKPAM
	}
	if s.title != "" {
		b.WriteString(ansi.SetWindowTitle(s.title))
	}
	if style, blink := s.emu.CursorStyle(); style != vt.CursorBlock || !blink {
		n := 1 + 2*int(style) // DECSCUSR: 1 blinking block, 3 underline, 5 bar
		if !blink {
			n++
		}
		b.WriteString("\x1b[" + strconv.Itoa(n) + " q")
	}
	pos := s.emu.CursorPosition()
	row := pos.Y + 1
	if s.modes[ansi.ModeOrigin] {
		writeMode(&b, ansi.ModeOrigin, true)
		if s.top > 0 {
			row -= s.top - 1
		}
	}
	cup(&b, row, pos.X+1)
	if s.emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	}
	return []byte(b.String())
}

func writeMode(b *strings.Builder, m ansi.Mode, on bool) {
	b.WriteString("\x1b[")
	if _, dec := m.(ansi.DECMode); dec {
		b.WriteByte('?')
	}
	b.WriteString(strconv.Itoa(m.Mode()))
	if on {
		b.WriteByte('h')
	} else {
		b.WriteByte('l')
	}
}

func cup(b *strings.Builder, row, col int) {
	b.WriteString("\x1b[" + strconv.Itoa(row) + ";" + strconv.Itoa(col) + "H")
}

// padToCursor writes spaces from the end of the cursor's line to the
// cursor: a prompt's trailing space ("$ ") is a written cell in a terminal
// that saw the output, and writeLines leaves trailing blanks unwritten, so
// without them a client's copy of the screen (xterm.js's serialize, its
// selection) would differ from one that followed the stream.
func padToCursor(b *strings.Builder, lines []uv.Line, pos uv.Position, cols int) {
	if pos.Y < 0 || pos.Y >= len(lines) || pos.X <= 0 {
		return
	}
	l := lines[pos.Y]
	if len(l) > cols {
		l = l[:cols]
	}
	w := ansi.StringWidth(strings.TrimRight(l.Render(), " "))
	if pos.X <= w {
		return
	}
	cup(b, pos.Y+1, w+1)
	b.WriteString("\x1b[m")
	b.WriteString(strings.Repeat(" ", pos.X-w))
}

// writeLines writes each line at its row, clipped to rows×cols; blank
// cells at the end of a line are left to the reset screen.
func writeLines(b *strings.Builder, lines []uv.Line, rows, cols int) {
	for y, l := range lines {
		if y >= rows {
			break
		}
		if len(l) > cols {
			l = l[:cols]
		}
		r := l.Render()
		if strings.TrimRight(r, " ") == "" {
			continue
		}
		cup(b, y+1, 1)
		b.WriteString(r)
	}
}

// Diff reports how two screens differ ("" when they look the same): cells
// with their attributes, cursor, alternate screen, the tracked modes and
// the title.
func Diff(a, b *Screen) string {
	ea, eb := a.Emulator(), b.Emulator()
	if ra, rb := ea.Render(), eb.Render(); ra != rb {
		return fmt.Sprintf("cells differ:\n%q\n%q", ra, rb)
	}
	if ea.CursorPosition() != eb.CursorPosition() || ea.CursorHidden() != eb.CursorHidden() {
		return fmt.Sprintf("cursor %v hidden %v vs %v hidden %v", ea.CursorPosition(), ea.CursorHidden(), eb.CursorPosition(), eb.CursorHidden())
	}
	if ea.IsAltScreen() != eb.IsAltScreen() {
		return "alternate screen differs"
	}
	for _, m := range genericModes {
		va, oka := a.modes[m.mode]
		vb, okb := b.modes[m.mode]
		if (oka && va != m.def) != (okb && vb != m.def) {
			return fmt.Sprintf("mode %v differs", m.mode)
		}
	}
	if a.title != b.title || a.top != b.top || a.bottom != b.bottom {
		return fmt.Sprintf("title/region %q %d-%d vs %q %d-%d", a.title, a.top, a.bottom, b.title, b.top, b.bottom)
	}
	return ""
}
