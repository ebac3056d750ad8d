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
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
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
	// tr is the parser's state after the bytes written so far (a
	// tracker of its own, for the plain-text shortcut).
	tr Tracker
	// skipped counts bytes the fast path did not have to emulate.
	skipped int64
	sgr     []byte // scratch: the SGR sequences of a skipped span
	panics  int
	// margins: left/right margins were set (DECSLRM) since the last reset.
	margins bool
	// pend is output written but not fed to the emulator yet (Write
	// holds back the end of a run of plain text), splits where writes
	// ended in it (see feed).
	pend   []byte
	splits []int
	// regions: the main (0) and the alternate (1) screen have a scroll
	// region (the library keeps one for each).
	regions [2]bool
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// New returns a blank screen of rows×cols.
func New(rows, cols int) *Screen {
	s := &Screen{modes: map[ansi.Mode]bool{}}
	s.init(rows, cols)
	return s
}

// init gives s a blank emulator of rows×cols, with s's handlers.
func (s *Screen) init(rows, cols int) {
	s.emu = vt.NewEmulator(cols, rows)
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
		if bottom > s.emu.Height() {
			// The library takes a region below the screen, and panics
			// on the next scroll in it: ignore the sequence.
			return true
		}
		if top < bottom {
			// The library keeps a region for each screen.
			s.regions[b2i(s.emu.IsAltScreen())] = top > 1 || bottom < s.emu.Height()
			s.top, s.bottom = top, bottom
			if top == 1 && bottom == s.emu.Height() {
				s.top, s.bottom = 0, 0
			}
		}
		return false // the emulator's handler does the rest
	})
	s.emu.RegisterCsiHandler('s', func(ansi.Params) bool {
		// DECSLRM: the library keeps left/right margins even once
		// DECLRMM is reset; the shortcut is off from then on.
		if s.modes[ansi.ModeLeftRightMargin] {
			s.margins = true
		}
		return false
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
		s.title, s.top, s.bottom, s.main, s.margins, s.regions = "", 0, 0, nil, false, [2]bool{}
		clear(s.modes)
		return false
	})
}

// recoverPanic, deferred by Write, puts a blank emulator in place of one
// that panicked (an input the library does not survive), so that one
// terminal's output cannot take the service down; Panics counts them.
func (s *Screen) recoverPanic() {
	if recover() == nil {
		return
	}
	rows, cols := s.emu.Height(), s.emu.Width()
	s.title, s.top, s.bottom, s.altMode, s.main, s.margins, s.regions = "", 0, 0, 0, nil, false, [2]bool{}
	clear(s.modes)
	s.tr = Tracker{}
	s.pend, s.splits = s.pend[:0], s.splits[:0]
	s.init(rows, cols)
	s.panics++
}

// Panics is how many times the emulator panicked and was replaced by a
// blank one.
func (s *Screen) Panics() int { return s.panics }

// Write feeds output to the emulator.
//
// The library costs about a microsecond per byte (it copies every cell
// of the screen on each scroll, and builds a cell for each character), so
// Write takes a shortcut that leaves the screen as it would be. In a run
// of plain text (PlainRun: printable characters, UTF-8, CR, LF, tab,
// backspace, BEL, SGR and erase-in-line sequences, starting where the
// parser is in its ground state) only the pen (the SGR sequences) and the
// last lines can show on the screen: the cursor only moves down or along
// its line. So when a run holds more than 2×rows line feeds, Write picks
// a carriage return (the cut) with rows+1 line feeds after it, feeds the
// SGR sequences before the cut, puts the cursor where the cut leaves it
// (column 0 of the bottom line: rows line feeds before the cut brought it
// there, and the carriage return to column 0, ending any pending wrap),
// then feeds the run from the cut on. Every line then on the screen was
// scrolled in blank during that tail, in the full emulation as here.
// When the tail has no escape sequence, the pen is the same all along it,
// so the blank lines are all the same: the screen is erased (with that
// pen) and the tail written from the top, which spares the emulator its
// scrolls. The shortcut is off while a scroll region or left/right
// margins are set (the cursor could then be outside the region).
func (s *Screen) Write(p []byte) {
	if !emulate {
		return
	}
	defer s.recoverPanic()
	rows := s.emu.Height()
	q := p
	if len(s.pend) > 0 {
		if len(p) > 0 && p[0] >= 0x80 {
			s.splits = append(s.splits, len(s.pend))
		}
		s.pend = append(s.pend, p...)
		q = s.pend
	}
	fed, last := 0, -1
	for i := 0; i < len(q); {
		if !s.tr.Ground() {
			s.tr.Next(q[i])
			i++
			continue
		}
		end := PlainRun(q, i)
		if end == i {
			s.tr.Next(q[i])
			i++
			continue
		}
		if end == len(q) {
			last = i
		}
		lfs := bytes.Count(q[i:end], []byte{'\n'})
		if lfs > 2*rows+1 && q[i] < 0x80 {
			// What came before may set a scroll region: feed it first.
			// (The emulator ends a grapheme cluster at the end of each
			// write: only before an ASCII byte, which cannot extend one,
			// is that the same as the whole.)
			s.feed(q, fed, i)
			fed = i
		}
		if cut, ok := s.cut(q[i:end], lfs, rows); ok && fed == i {
			cut += i
			s.sgr = AppendSGR(s.sgr[:0], q[i:cut])
			if bytes.IndexByte(q[cut:end], 0x1b) < 0 {
				s.sgr = append(s.sgr, "\x1b[H\x1b[J"...)
			} else {
				s.sgr = append(s.sgr, "\x1b["+strconv.Itoa(rows)+";1H"...)
			}
			_, _ = s.emu.Write(s.sgr)
			s.skipped += int64(cut - i)
			fed = cut
		}
		i = end
	}
	// The end of a run that reaches the end of the output is held back:
	// if the next write goes on with the run, it may be skipped too.
	hold := len(q)
	if last >= 0 {
		if h := max(fed, last); h < len(q) && q[h] < 0x80 && len(q)-h <= maxPend {
			hold = h
		}
	}
	s.feed(q, fed, hold)
	s.keep(q, hold)
	if s.main != nil && !s.emu.IsAltScreen() {
		s.main = nil // back on the main screen: the copy is stale
	}
}

// maxPend is the most output Write holds back.
const maxPend = 64 << 10

// feed writes q[from:to] to the emulator, in as many writes as the
// output came in where a write's end fell before a byte that could
// extend a grapheme cluster (splits): the emulator ends clusters there.
func (s *Screen) feed(q []byte, from, to int) {
	for _, sp := range s.splits {
		if sp > from && sp < to {
			_, _ = s.emu.Write(q[from:sp])
			from = sp
		}
	}
	if from < to {
		_, _ = s.emu.Write(q[from:to])
	}
}

// keep makes q[hold:] the held-back output.
func (s *Screen) keep(q []byte, hold int) {
	n := 0
	for _, sp := range s.splits {
		if sp > hold {
			s.splits[n] = sp - hold
			n++
		}
	}
	s.splits = s.splits[:n]
	rest := q[hold:]
	if len(s.pend) > 0 && &q[0] == &s.pend[0] {
		s.pend = s.pend[:copy(s.pend, rest)]
	} else {
		s.pend = append(s.pend[:0], rest...)
	}
	if cap(s.pend) > 4*maxPend && len(s.pend) < maxPend {
		s.pend = append([]byte(nil), s.pend...) // let a large buffer go
	}
}

// Flush feeds the output Write held back; reading the screen flushes.
func (s *Screen) Flush() {
	if len(s.pend) == 0 {
		return
	}
	defer s.recoverPanic()
	s.feed(s.pend, 0, len(s.pend))
	s.pend, s.splits = s.pend[:0], s.splits[:0]
	if s.main != nil && !s.emu.IsAltScreen() {
		s.main = nil
	}
}

// cut returns where the shortcut may start emulating the plain run r
// again: a carriage return with rows+1 line feeds after it and at least
// rows before it. ok is false when there is none, or the screen has a
// scroll region or margins.
func (s *Screen) cut(r []byte, lfs, rows int) (int, bool) {
	if lfs <= 2*rows+1 || s.top != 0 || s.regions != [2]bool{} || s.margins || s.modes[ansi.ModeLeftRightMargin] {
		return 0, false
	}
	// The first of the last rows+1 line feeds.
	last := len(r)
	for range rows + 1 {
		last = bytes.LastIndexByte(r[:last], '\n')
	}
	c := bytes.LastIndexByte(r[:last], '\r')
	if c < 0 || lfs-bytes.Count(r[c:], []byte{'\n'}) < rows {
		return 0, false
	}
	return c, true
}

// Skipped is how many bytes the plain-text shortcut did not emulate.
func (s *Screen) Skipped() int64 { return s.skipped }

// PlainRun returns the end of the run of plain text starting at i (i
// when p[i] does not start one), with the parser in its ground state at
// i: printable ASCII, complete UTF-8 sequences (a lead byte and its
// continuation bytes: the parser takes the bytes after a lead byte
// whatever they are, so a run stops before a malformed one), the bytes
// the parser ignores in its ground state (0xA0-0xC1, 0xF5-0xFF) but not
// the UTF-8 form of the C1 controls (xterm.js obeys them), CR, LF,
// tab, backspace, BEL, and complete SGR and EL sequences. It stops
// before any other control (C0 or C1: those may change modes, character
// sets or tab stops, or move the cursor up) and before a sequence the
// end of p cuts.
func PlainRun(p []byte, i int) int {
	const ones, highs, spaces = 0x0101010101010101, 0x8080808080808080, 0x2020202020202020
	for i < len(p) {
		// Eight bytes of printable ASCII at a time: none below 0x20,
		// none of 0x7F and above.
		for i+8 <= len(p) {
			w := binary.LittleEndian.Uint64(p[i:])
			if ((w-spaces)&^w|(w+ones)|w)&highs != 0 {
				break
			}
			i += 8
		}
		if i >= len(p) {
			break
		}
		switch b := p[i]; {
		case b >= 0x20 && b < 0x7f, b == '\r', b == '\n', b == '\t', b == '\b', b == 0x07:
			i++
		case b == 0x1b:
			n, _ := seqLen(p[i:])
			if n == 0 {
				return i
			}
			i += n
		case b >= 0xc2 && b <= 0xf4:
			n := 2
			if b >= 0xf0 {
				n = 4
			} else if b >= 0xe0 {
				n = 3
			}
			if i+n > len(p) || b == 0xc2 && p[i+1] < 0xa0 {
				// (U+0080-U+009F are C1 controls to xterm.js.)
				return i
			}
			for _, c := range p[i+1 : i+n] {
				if c < 0x80 || c > 0xbf {
					return i
				}
			}
			i += n
		case b >= 0xa0: // 0xA0-0xC1, 0xF5-0xFF: ignored by the parser
			i++
		default:
			return i
		}
	}
	return i
}

// seqLen is the length of the SGR (CSI digits ; : m) or EL (CSI [0-2] K)
// sequence p starts with, 0 if it does not start with a complete one;
// sgr tells which.
func seqLen(p []byte) (n int, sgr bool) {
	if len(p) < 3 || p[0] != 0x1b || p[1] != '[' {
		return 0, false
	}
	if p[2] == 'K' {
		return 3, false
	}
	if len(p) >= 4 && p[3] == 'K' && p[2] >= '0' && p[2] <= '2' {
		return 4, false
	}
	for i := 2; i < len(p) && i < 64; i++ {
		switch b := p[i]; {
		case b == 'm':
			return i + 1, true
		case b >= '0' && b <= '9', b == ';', b == ':':
		default:
			return 0, false
		}
	}
	return 0, false
}

// AppendSGR appends the SGR sequences found in the plain run p, from the
// last full reset (ESC [ m or ESC [ 0 m) on: what came before it no
// longer shows in the pen. (In a plain run every ESC starts a complete
// sequence, so these bytes are a reset wherever they are found.)
func AppendSGR(dst, p []byte) []byte {
	if bytes.IndexByte(p, 0x1b) < 0 {
		return dst
	}
	for j := len(p); ; { // back to the last reset
		k := bytes.LastIndexByte(p[:j], 0x1b)
		if k < 0 {
			break
		}
		if bytes.HasPrefix(p[k:], []byte("\x1b[m")) || bytes.HasPrefix(p[k:], []byte("\x1b[0m")) {
			p = p[k:]
			break
		}
		j = k
	}
	for {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			return dst
		}
		n, sgr := seqLen(p[i:])
		n = max(n, 1)
		if sgr {
			dst = append(dst, p[i:i+n]...)
		}
		p = p[i+n:]
	}
}

// Tracker follows the emulator's parser (the same transition table, and
// its UTF-8 rule: a lead byte takes the next one to three bytes whatever
// they are) to know where it is in its ground state. The zero value is a
// parser in its ground state.
type Tracker struct {
	st   parser.State
	utf8 int8 // bytes of the UTF-8 sequence still to come
}

// Ground tells whether the parser is in its ground state (not inside a
// sequence or a UTF-8 character).
func (t *Tracker) Ground() bool { return t.st == parser.GroundState }

// Scan moves the tracker over p: runs of plain text at a time, a byte at a
// time elsewhere.
func (t *Tracker) Scan(p []byte) {
	for i := 0; i < len(p); {
		if t.Ground() {
			if end := PlainRun(p, i); end > i {
				i = end
				continue
			}
		}
		t.Next(p[i])
		i++
	}
}

// Next moves the tracker over one byte.
func (t *Tracker) Next(b byte) {
	if t.st == parser.Utf8State {
		if t.utf8--; t.utf8 <= 0 {
			t.st = parser.GroundState
		}
		return
	}
	st, _ := parser.Table.Transition(t.st, b)
	if st == parser.Utf8State {
		switch {
		case b >= 0xf0:
			t.utf8 = 3
		case b >= 0xe0:
			t.utf8 = 2
		default:
			t.utf8 = 1
		}
	}
	t.st = st
}

// Resize changes the screen's size, as a terminal resize does.
func (s *Screen) Resize(rows, cols int) {
	s.Flush()
	if rows == s.emu.Height() && cols == s.emu.Width() {
		return
	}
	s.emu.Resize(cols, rows)
	// xterm (and the library) reset the margins on resize.
	s.top, s.bottom, s.margins, s.regions = 0, 0, false, [2]bool{}
}

// Size is the screen's size.
func (s *Screen) Size() (rows, cols int) { return s.emu.Height(), s.emu.Width() }

// Emulator is the underlying emulator (tests read its cells).
func (s *Screen) Emulator() *vt.Emulator {
	s.Flush()
	return s.emu
}

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
	s.Flush()
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
