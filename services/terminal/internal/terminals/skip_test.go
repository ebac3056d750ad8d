package terminals

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"

	"github.com/svc-code/svc-code/services/terminal/internal/pty"
	"github.com/svc-code/svc-code/services/terminal/internal/vtscreen"
)

// findSkip is findSkipFrom with nothing known to be plain yet.
func findSkip(b []byte, need int) (x int, pen []byte, bad int) {
	x, pen, bad, _ = findSkipFrom(b, 0, need)
	return x, pen, bad
}

func TestFindSkip(t *testing.T) {
	lines := func(n int, f string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, f, i)
		}
		return b.String()
	}
	cases := []struct {
		name string
		in   string
		need int
		x    int
		pen  string
		bad  int
	}{
		{name: "too few lines", in: lines(3, "line %d\r\n"), need: 3, x: 0, bad: -1},
		{name: "just enough", in: lines(4, "line %d\r\n"), need: 3, x: len("line 0\r\n"), bad: -1},
		{name: "lone LF does not count", in: "a\r\nb\nc\r\nd\r\n", need: 2, x: len("a\r\n"), bad: -1},
		{
			name: "pen from the last reset", in: "\x1b[1m\x1b[31ma\x1b[0mb\x1b[4mc\x1b[32m\r\n" + lines(2, "l%d\r\n"), need: 2,
			x: len("\x1b[1m\x1b[31ma\x1b[0mb\x1b[4mc\x1b[32m\r\n"), pen: "\x1b[0m\x1b[4m\x1b[32m", bad: -1,
		},
		{name: "SGR after x is not pen", in: "a\r\n\x1b[31mb\r\nc\r\n", need: 2, x: 3, pen: "", bad: -1},
		{name: "erase in line is plain", in: "a\x1b[K\r\n\x1b[2Kb\r\nc\r\n", need: 2, x: len("a\x1b[K\r\n"), bad: -1},
		{name: "cursor home is not", in: "a\r\n\x1b[Hb\r\nc\r\nd\r\n", need: 2, x: 0, bad: len("a\r\n")},
		{name: "private mode is not", in: "a\r\n\x1b[?25lb\r\nc\r\nd\r\n", need: 2, x: 0, bad: len("a\r\n")},
		{name: "OSC is not", in: "\x1b]0;t\x07a\r\nb\r\nc\r\n", need: 1, x: 0, bad: 0},
		{name: "shift out is not", in: "a\x0e\r\nb\r\nc\r\n", need: 1, x: 0, bad: 1},
		{name: "C1 CSI in UTF-8 is not", in: "a\xc2\x9bHb\r\nc\r\nd\r\n", need: 1, x: 0, bad: 1},
		{name: "UTF-8 text is plain", in: "é界\r\nb\r\nc\r\n", need: 1, x: len("é界\r\nb\r\n"), bad: -1},
		{name: "a cut sequence after the last line is not looked at", in: "a\r\nb\r\nc\r\n\x1b[2", need: 1, x: len("a\r\nb\r\n"), bad: -1},
		{name: "nothing after the last line matters", in: "a\r\nb\r\nc\r\n\x1b[H\x1b[2J", need: 1, x: len("a\r\nb\r\n"), bad: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, pen, bad := findSkip([]byte(c.in), c.need)
			if x != c.x || string(pen) != c.pen || bad != c.bad {
				t.Fatalf("findSkip(%q, %d) = %d, %q, %d; want %d, %q, %d", c.in, c.need, x, pen, bad, c.x, c.pen, c.bad)
			}
		})
	}
}

// state is what a client can show: the scrollback it keeps, the screen
// (with attributes) and the cursor.
func state(e *vt.Emulator) string {
	var b strings.Builder
	for _, l := range e.Scrollback().Lines() {
		b.WriteString(l.Render())
		b.WriteByte('\n')
	}
	b.WriteString("--screen--\n")
	b.WriteString(e.Render())
	fmt.Fprintf(&b, "\n--cursor %v--", e.CursorPosition())
	return b.String()
}

func newEmu(rows, cols, keep int) *vt.Emulator {
	e := vt.NewEmulator(cols, rows)
	e.SetScrollbackSize(keep)
	return e
}

// randomPlain is plain output: lines of words, colours, wide characters,
// tabs, lines longer than the screen, erase-in-line.
func randomPlain(r *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	pieces := []string{"word", "x", "界面", "é", "\t", "\x1b[31m", "\x1b[1;4m", "\x1b[0m", "\x1b[m", "\x1b[38;5;120m", "\x1b[48:2::10:20:30m", "\x1b[K", "   "}
	if r.IntN(3) == 0 {
		// One colour set at the start and none after it: only the pen
		// carries it past a skip.
		b.WriteString("\x1b[0;35;1m")
		pieces = []string{"word", "x", "界面", "\t", "\x1b[K", "   "}
	}
	for range lines {
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		if r.IntN(10) == 0 {
			b.WriteString(strings.Repeat("long", 12))
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// randomScreenful is output that is not plain: cursor moves, clears,
// scroll regions, modes, a title.
func randomScreenful(r *rand.Rand) []byte {
	pieces := []string{"\x1b[H", "\x1b[2J", "\x1b[5;3H", "\x1b[3A", "\x1b[2;6r", "\x1b[r", "\x1b[?7l", "\x1b[?7h", "\x1b]0;title\x07", "\x1b[7m", "abc", "\r\n", "\x1bM", "\x1b[4h", "\x1b[4l", "\x1b[?6h", "\x1b[?6l"}
	var b bytes.Buffer
	for n := 5 + r.IntN(30); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteString("\x1b[r\x1b[?6l\x1b[4l\r\n")
	return b.Bytes()
}

// TestSkipKeepsScreenAndScrollback feeds one emulator every byte and
// another what a skipping client gets (the server's rule applied whenever
// the output it has not sent allows), and wants the same scrollback,
// screen and cursor from both.
func TestSkipKeepsScreenAndScrollback(t *testing.T) {
	const rows, cols, keep = 8, 24, 30
	need := keep + 2*rows + skipMargin
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 18))
		var out []byte
		for range 2 + r.IntN(5) {
			if r.IntN(3) == 0 {
				out = append(out, randomScreenful(r)...)
			}
			out = append(out, randomPlain(r, r.IntN(4*need))...)
		}
		if r.IntN(2) == 0 {
			out = append(out, randomScreenful(r)...)
		}
		full, skipping := newEmu(rows, cols, keep), newEmu(rows, cols, keep)
		// PEN, printed after everything, shows the pen left at the end.
		out = append(out, "PEN"...)
		_, _ = full.Write(out)
		cursor, skips, skipped := 0, 0, 0
		var tr vtscreen.Tracker // the client's parser at cursor
		// The server has read up to end; the client is sent up to a
		// window at a time, and skipped ahead when the rule allows.
		for end := 0; cursor < len(out); {
			end = min(len(out), end+1+r.IntN(3000))
			for cursor < end {
				if x, pen, _ := findSkip(out[cursor:end], need); x > 0 && tr.Ground() {
					_, _ = skipping.Write(pen)
					cursor += x
					skips++
					skipped += x
					continue
				}
				n := min(end-cursor, 1+r.IntN(700))
				_, _ = skipping.Write(out[cursor : cursor+n])
				tr.Scan(out[cursor : cursor+n])
				cursor += n
				if r.IntN(2) == 0 {
					break // the server reads more before the next send
				}
			}
		}
		if got, want := state(skipping), state(full); got != want {
			t.Fatalf("seed %d (%d bytes, %d skips of %d bytes): the skipping client differs\n got: %q\nwant: %q", seed, len(out), skips, skipped, got, want)
		}
		if seed == 0 && skips == 0 {
			t.Fatalf("seed 0 never skipped: the test does not test the rule")
		}
	}
}

func BenchmarkFindSkip(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	out := randomPlain(r, 40000)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if x, _, _ := findSkip(out, 5000+2*50+skipMargin); x == 0 {
			b.Fatal("no skip")
		}
	}
}

// bareTerminal is a terminal whose output the test publishes: its PTY runs
// a sleep that nothing reads from (the terminal's loops are not started).
func bareTerminal(t *testing.T, rows int) *Terminal {
	p, err := pty.Start(pty.Options{Path: "/bin/sleep", Args: []string{"60"}, Dir: "/", Rows: uint16(rows), Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(); _ = p.WaitExited() })
	m := NewManager(Config{Scrollback: 1 << 20, FlowHigh: 64 << 10, FlowLow: 16 << 10, Log: slog.New(slog.DiscardHandler), Now: time.Now}, nil)
	return newTerminal(m, "bare", "/", p, uint16(rows), 80)
}

// TestNoSkipFromTheMiddleOfASequence: a skipping client that resumes in
// the middle of an OSC string (its parser is not in the ground state there)
// is sent the output until the string ends before anything is left out;
// one that resumes at a line start is left the flood out at once.
func TestNoSkipFromTheMiddleOfASequence(t *testing.T) {
	tm := bareTerminal(t, 10)
	head := "\x1b]0;a title that spans the resume point\x07\r\n"
	tm.publish([]byte(head))
	tm.publish(bytes.Repeat([]byte("plain line of a flood\r\n"), 2000))
	buf := make([]byte, 64<<10)

	mid := tm.attach(&Resume{Stream: tm.stream, Offset: 10}, true, 100)
	n, screen, skip := mid.Sub.NextFlow(buf, false)
	if screen != nil || skip != nil || n == 0 {
		t.Fatalf("mid-OSC: first NextFlow = %d, %v, %+v; want output", n, screen, skip)
	}
	for skip == nil {
		if n, _, skip = mid.Sub.NextFlow(buf, false); n == 0 && skip == nil {
			_ = mid.Sub.Ack(mid.Sub.Offset())
		}
	}
	if skip.From < int64(len(head)) {
		t.Fatalf("skip %+v starts before the OSC string ends (%d)", skip, len(head))
	}

	start := tm.attach(&Resume{Stream: tm.stream, Offset: int64(len(head))}, true, 100)
	if _, _, skip := start.Sub.NextFlow(buf, false); skip == nil || skip.From != int64(len(head)) {
		t.Fatalf("at a line start: %+v, want a skip from %d", skip, len(head))
	}
}

// TestSkipsOfAClientThatDoesNotAcknowledge: a skipping client that never
// acknowledges is sent one window and then only skips; what the server
// keeps for it (the spans left out since its last ack) stops growing once
// its window is full, however long the flood.
func TestSkipsOfAClientThatDoesNotAcknowledge(t *testing.T) {
	tm := bareTerminal(t, 10)
	a := tm.attach(nil, true, 100)
	buf := make([]byte, 64<<10)
	line := bytes.Repeat([]byte("plain line of a flood\r\n"), 1000)
	skips := 0
	spans := func() (int, int64) {
		tm.mu.Lock()
		defer tm.mu.Unlock()
		return len(a.Sub.spans), a.Sub.roomLocked()
	}
	var early int
	for i := range 200 {
		tm.publish(line)
		for {
			n, _, skip := a.Sub.NextFlow(buf, false)
			if skip != nil {
				skips++
			}
			if n == 0 && skip == nil {
				break
			}
		}
		if i == 20 {
			early, _ = spans()
		}
	}
	n, room := spans()
	if skips < 100 || n != early || room > 0 {
		t.Fatalf("%d skips; %d spans kept after 20 rounds, %d after 200; room %d: want many skips, no more spans once the window is full, no room", skips, early, n, room)
	}
}
