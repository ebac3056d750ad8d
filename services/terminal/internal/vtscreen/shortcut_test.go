package vtscreen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// fullWrite feeds p to the emulator byte for byte, without the shortcut,
// keeping what Write keeps besides.
func fullWrite(s *Screen, p []byte) {
	_, _ = s.emu.Write(p)
	if s.main != nil && !s.emu.IsAltScreen() {
		s.main = nil
	}
}

// compare feeds in to a screen through Write in the given pieces and to
// another in full, and reports how their serialized screens differ.
func compare(rows, cols int, in []byte, pieces []int) (skipped int64, diff string) {
	fast, full := New(rows, cols), New(rows, cols)
	defer func() {
		// The library panics on some inputs (Write recovers): nothing
		// to compare then.
		if recover() != nil {
			skipped, diff = 0, ""
		}
	}()
	off := 0
	for _, n := range pieces {
		n = min(n, len(in)-off)
		fast.Write(in[off : off+n])
		fullWrite(full, in[off:off+n])
		off += n
	}
	fast.Write(in[off:])
	fullWrite(full, in[off:])
	if a, b := full.Serialize(), fast.Serialize(); !bytes.Equal(a, b) {
		return fast.Skipped(), fmt.Sprintf("serialized screens differ:\nfull %q\nfast %q", a, b)
	}
	if d := Diff(full, fast); d != "" {
		return fast.Skipped(), d
	}
	return fast.Skipped(), ""
}

// randomPieces cuts n bytes into pieces of random sizes, from one byte to
// a few times the screen, so that sequences and runs are cut anywhere.
func randomPieces(r *rand.Rand, n int) []int {
	var out []int
	for n > 0 {
		k := 1 + r.IntN(min(n, []int{8, 300, 5000, 200000}[r.IntN(4)]))
		out = append(out, k)
		n -= k
	}
	return out
}

// TestShortcutOnRealisticOutput: the serialized screen after realistic
// output (corpus_test.go) is the same with the shortcut as byte for byte,
// in the terminal's batches and in random pieces, and the shortcut skips
// most of the scrolling outputs.
func TestShortcutOnRealisticOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, size := range [][2]int{{24, 80}, {5, 20}, {50, 200}} {
		rows, cols := size[0], size[1]
		for _, c := range corpora(256<<10/raceScale, rows) {
			for _, pieces := range [][]int{{448 << 10}, randomPieces(r, len(c.data))} {
				skipped, d := compare(rows, cols, c.data, pieces)
				if d != "" {
					t.Fatalf("%s on %dx%d in %d pieces: %s", c.name, rows, cols, len(pieces), d)
				}
				if len(pieces) == 1 && (c.name == "cat" || c.name == "ls-l" || c.name == "grep") && skipped < int64(len(c.data))/2 {
					t.Errorf("%s on %dx%d: the shortcut skipped only %d of %d bytes", c.name, rows, cols, skipped, len(c.data))
				}
			}
		}
	}
}

// adversarial pieces of output: everything the shortcut must stop at or
// carry over exactly (C0 and C1 controls, malformed UTF-8 that swallows
// a line feed or an escape, modes, character sets, tab stops, scroll
// regions and margins, the alternate screen, strings holding line feeds,
// pens with backgrounds, wide and combining characters), beside the plain
// lines that make runs long enough for the shortcut.
var adversarial = []string{
	"\r\n", "\n", "\r", "\t", "\b", "\a", "\x0b", "\x0c", "\x0e", "\x0f", "\x7f", "\x18", "\x1a", "\x1b", "\x1b\x1b",
	"\x84", "\x85", "\x88", "\x8d", "\x90q\n\n\x9c", "\x9b31m", "\x9b?1049h", "\x9d2;c1 title\x07", "\x9c", "\xa0", "\xc0", "\xc1", "\xf5", "\xff",
	"\xc3", "\xc3\n", "\xe2\x82", "\xe2\x82\n", "\xf0\x9f\x8e", "\xc3\x1b[?1049h", "\xe2\x1b[31m", "é", "日本語", "🎉", "e\u0301", "👩\u200d💻", "🇫🇷",
	"\x1b[m", "\x1b[0m", "\x1b[31m", "\x1b[44m", "\x1b[1;41m", "\x1b[7m", "\x1b[49m", "\x1b[38;5;48m", "\x1b[48;2;1;2;3m", "\x1b[48:2::1:2:3m", "\x1b[;m", "\x1b[0;1m",
	"\x1b[K", "\x1b[0K", "\x1b[1K", "\x1b[2K", "\x1b[3K", "\x1b[J", "\x1b[2J", "\x1b[3J",
	"\x1b[A", "\x1b[5A", "\x1b[H", "\x1b[3;4H", "\x1b[10C", "\x1b[2D", "\x1bM", "\x1bD", "\x1bE", "\x1b7", "\x1b8", "\x1b[s", "\x1b[u",
	"\x1b[2;4r", "\x1b[r", "\x1b[?69h\x1b[3;9s", "\x1b[?69l", "\x1b[?6h", "\x1b[?6l", "\x1b[?7l", "\x1b[?7h", "\x1b[4h", "\x1b[4l", "\x1b[20h", "\x1b[20l",
	"\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?47l", "\x1b[?1h\x1b=", "\x1b[?2004h", "\x1b[?25l", "\x1b[?25h", "\x1b[5 q",
	"\x1b(0", "\x1b(B", "\x1b)0", "\x1bH", "\x1b[g", "\x1b[3g", "\x1b]2;title\x07", "\x1b]0;t\n\nx\x1b\\", "\x1b]8;;http://x\x07", "\x1b]8;;\x07",
	"\x1bP1$r\n\n\x1b\\", "\x1b_apc\n\n\x1b\\", "\x1bX\n\x1b\\", "\x1b[1;2", "\x1b[?", "\x1b]2;unterminated", "\x1bc", "\x1b[!p",
}

// randomOutput is output of about size bytes: mostly plain lines (of
// random width, some wrapping, some coloured), cut by adversarial pieces.
func randomOutput(r *rand.Rand, size, cols int) []byte {
	var b strings.Builder
	for b.Len() < size {
		switch k := r.IntN(100); {
		case k < 6:
			for range 1 + r.IntN(4) {
				b.WriteString(adversarial[r.IntN(len(adversarial))])
			}
		default:
			n := r.IntN(100)
			for range n {
				w := r.IntN(2*cols + 3)
				switch r.IntN(12) {
				case 0:
					b.WriteString("\x1b[3" + string(rune('0'+r.IntN(8))) + "m")
				case 1:
					b.WriteString("\x1b[m\x1b[K")
				case 2:
					b.WriteString("\x1b[4" + string(rune('0'+r.IntN(10))) + "m")
				case 3:
					b.WriteString("日本\tx")
				}
				b.WriteString(strings.Repeat(string(rune('a'+r.IntN(26))), w))
				if r.IntN(30) == 0 {
					b.WriteString(adversarial[r.IntN(len(adversarial))])
				}
				switch r.IntN(40) {
				case 0:
					b.WriteString("\n")
				case 1:
					b.WriteString("\r")
				default:
					b.WriteString("\r\n")
				}
			}
		}
	}
	return []byte(b.String())
}

// TestShortcutOnAdversarialOutput: random output built to break the
// shortcut leaves the same serialized screen as byte-for-byte emulation,
// on small and usual screens, in random pieces.
func TestShortcutOnAdversarialOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var skipped, total int64
	for i := range 300 / raceScale {
		rows, cols := 1+r.IntN(12), 2+r.IntN(40)
		if i%10 == 0 {
			rows, cols = 24, 80
		}
		in := randomOutput(r, 2000+r.IntN(60000), cols)
		n, d := compare(rows, cols, in, randomPieces(r, len(in)))
		if d != "" {
			t.Fatalf("case %d (%dx%d, %d bytes): %s\ninput %q", i, rows, cols, len(in), d, in)
		}
		skipped += n
		total += int64(len(in))
	}
	if skipped < total/10 {
		t.Errorf("the shortcut skipped %d of %d bytes: the test hardly exercises it", skipped, total)
	}
	t.Logf("skipped %d of %d bytes", skipped, total)
}

// FuzzShortcut: any output, in any two pieces, on a small screen, leaves
// the same serialized screen with the shortcut as without.
func FuzzShortcut(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(uint8(r.IntN(8)), uint8(r.IntN(30)), uint16(r.IntN(5000)), randomOutput(r, 3000, 20))
	}
	f.Add(uint8(2), uint8(8), uint16(10), []byte(strings.Repeat("abc\r\n", 40)+"\x9b?1049h"+strings.Repeat("x\r\n", 40)))
	f.Fuzz(func(t *testing.T, rows, cols uint8, split uint16, in []byte) {
		h, w := 1+int(rows%12), 2+int(cols%40)
		// Repeat short inputs so that runs grow past the shortcut's threshold.
		for len(in) > 0 && len(in) < 4000 {
			in = append(in, in...)
		}
		if _, d := compare(h, w, in, []int{int(split)}); d != "" {
			t.Fatalf("%dx%d split at %d: %s\ninput %q", h, w, split, d, in)
		}
	})
}

// TestRegionBelowTheScreen: a scroll region reaching below the screen
// (the library would panic on the next scroll) is ignored, and a panic
// of the library leaves a blank screen that works on.
func TestRegionBelowTheScreen(t *testing.T) {
	s := New(24, 80)
	s.Write([]byte("\x1b[2;30r" + strings.Repeat("line\r\n", 40) + "$ "))
	if s.Panics() != 0 || !strings.Contains(s.Emulator().String(), "line") {
		t.Fatalf("panics %d, screen %q", s.Panics(), s.Emulator().String())
	}
	s.recoverPanicForTest()
	if s.Panics() != 1 {
		t.Fatalf("panics %d", s.Panics())
	}
	s.Write([]byte("after"))
	if got := strings.TrimSpace(s.Emulator().String()); got != "after" {
		t.Fatalf("screen after a panic %q", got)
	}
}

func (s *Screen) recoverPanicForTest() {
	defer s.recoverPanic()
	panic("test")
}
