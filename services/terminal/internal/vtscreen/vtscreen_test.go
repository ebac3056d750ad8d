package vtscreen

import (
	"strings"
	"testing"
)

// replay feeds a serialized screen to a fresh screen of the same size.
func replay(s *Screen) *Screen {
	rows, cols := s.Size()
	r := New(rows, cols)
	r.Write(s.Serialize())
	return r
}

func TestSerializeReproducesTheScreen(t *testing.T) {
	cases := map[string]string{
		"plain":   "hello\r\nworld\r\n$ ",
		"scroll":  strings.Repeat("line of text that is long enough\r\n", 100) + "$ ",
		"colours": "\x1b[31mred\x1b[0m \x1b[1;44mbold on blue\x1b[0m \x1b[38;5;200mpalette\x1b[0m \x1b[38;2;1;2;3mtrue\x1b[m\r\n",
		"wrap":    strings.Repeat("x", 200) + "\r\nnext",
		"wide":    "日本語のテキスト and emoji 🎉 done",
		"modes":   "\x1b[?1h\x1b=\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?7l\x1b]2;my title\x07\x1b[4 q\x1b[?25lhidden cursor",
		"alt": "main line 1\r\nmain line 2\r\n\x1b[?1049h\x1b[H\x1b[2J\x1b[7mstatus\x1b[m\x1b[5;10Hvim-like" +
			"\x1b[2;20r\x1b[10;1H",
		"origin": "\x1b[3;10r\x1b[?6h\x1b[2;5Hin region",
		"erase":  "abc\x1b[41m\x1b[K\x1b[m\r\ndef",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			s := New(24, 80)
			s.Write([]byte(in))
			if d := Diff(s, replay(s)); d != "" {
				t.Errorf("%s\nserialized: %q", d, s.Serialize())
			}
		})
	}
}

// TestAltScreenKeepsTheMainScreen: after the application leaves the
// alternate screen, a client resynchronised while it was shown has the
// main screen back.
func TestAltScreenKeepsTheMainScreen(t *testing.T) {
	s := New(10, 40)
	s.Write([]byte("shell output\r\n$ vim\r\n\x1b[?1049h\x1b[Hfull screen app"))
	r := replay(s)
	leave := []byte("\x1b[?1049l")
	s.Write(leave)
	r.Write(leave)
	if !strings.Contains(r.Emulator().String(), "shell output") {
		t.Fatalf("main screen lost after leaving the alternate screen: %q", r.Emulator().String())
	}
	if d := Diff(s, r); d != "" {
		t.Error(d)
	}
}

// TestRepliesDoNotBlock: queries the emulator answers (device attributes,
// cursor position) must not block it, as nothing reads its replies.
func TestRepliesDoNotBlock(t *testing.T) {
	s := New(24, 80)
	s.Write([]byte("\x1b[c\x1b[>c\x1b[6n\x1b[5n\x1b[?2004$p\x1b]11;?\x07done"))
	if !strings.Contains(s.Emulator().String(), "done") {
		t.Fatal("output after the queries was not processed")
	}
}

func TestResizeKeepsSerializing(t *testing.T) {
	s := New(24, 80)
	s.Write([]byte("\x1b[5;10rbefore"))
	s.Resize(30, 100)
	s.Write([]byte("\r\nafter"))
	if rows, cols := s.Size(); rows != 30 || cols != 100 {
		t.Fatalf("size %dx%d", rows, cols)
	}
	if d := Diff(s, replay(s)); d != "" {
		t.Error(d)
	}
}

// TestShortcutLeavesTheSameScreen: the plain-text shortcut of Write ends
// on the screen the emulator reaches on every byte, for plain and coloured
// floods, tabs, long lines that wrap, a scroll region (shortcut off) and
// text cut in the middle of escape sequences by the chunking.
func TestShortcutLeavesTheSameScreen(t *testing.T) {
	var plain, colour, mixed strings.Builder
	for i := range 3000 {
		plain.WriteString(strings.Repeat("p", i%150) + "\r\n")
		colour.WriteString("\x1b[3" + string(rune('0'+i%8)) + "mline\x1b[0m \x1b[1;44mbold\tblue\x1b[m " + strings.Repeat("c", i%90) + "\r\n")
		if i%500 == 0 {
			mixed.WriteString("\x1b]2;title " + strings.Repeat("x", i%7) + "\x07\x1b[?1h\x1b[2;10r\x1b[5;1Hregion\r\n\x1b[r")
		}
		mixed.WriteString("\x1b[4" + string(rune('0'+i%8)) + "m" + strings.Repeat("m", i%100) + "\r\n")
	}
	for name, in := range map[string]string{"plain": plain.String(), "colour": colour.String(), "mixed": mixed.String()} {
		for _, chunk := range []int{7, 4096, 128 << 10} {
			fast, full := New(24, 80), New(24, 80)
			for off := 0; off < len(in); off += chunk {
				fast.Write([]byte(in[off:min(off+chunk, len(in))]))
			}
			_, _ = full.emu.Write([]byte(in))
			if d := Diff(full, fast); d != "" {
				t.Errorf("%s in chunks of %d: %s", name, chunk, d)
			}
			if chunk == 128<<10 && fast.Skipped() == 0 {
				t.Errorf("%s: the shortcut skipped nothing", name)
			}
		}
	}
}

// A prompt's trailing space is a written cell: the serialized screen writes
// it (up to the cursor), so a client's copy holds the same cells as one
// that followed the stream (xterm.js serializes a never-written cell as a
// cursor move, a written space as a space).
func TestSerializeWritesTheBlanksBeforeTheCursor(t *testing.T) {
	s := New(5, 30)
	s.Write([]byte("out\r\nroot@vm:~# "))
	got := string(s.Serialize())
	if want := "\x1b[2;11H\x1b[m "; !strings.Contains(got, want) {
		t.Fatalf("serialized %q lacks %q (the space after the prompt)", got, want)
	}
	// Nothing is padded when the cursor is inside the text.
	s = New(5, 30)
	s.Write([]byte("abcdef\x1b[3G"))
	if got := string(s.Serialize()); strings.Contains(got, "\x1b[m ") {
		t.Fatalf("serialized %q pads a line whose cursor is inside it", got)
	}
}
