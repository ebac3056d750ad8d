package vtscreen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Realistic terminal output, as a shell's PTY hands it out (ONLCR: every
// newline is CR LF), for the benchmarks and the differential tests.

var corpusWords = strings.Fields("func return if err != nil { } ctx, cancel := the terminal gateway session output " +
	"bytes WARN INFO level=debug msg=\"listening\" for range i++ 0x1f 3.14159 []byte map[string]int // TODO: " +
	"SELECT * FROM turns WHERE id = 42; GET /api/sessions HTTP/1.1 200 OK lorem ipsum dolor sit amet, " +
	"~/.svc-code/projects $HOME --flag=value @decorator async await let const x")

// corpusCat is `cat` of a text file: lines of 0 to 160 characters (the
// terminal benchmark's file), some wider than 80 columns.
func corpusCat(r *rand.Rand, size int) []byte {
	var b strings.Builder
	for b.Len() < size {
		width := r.IntN(160)
		if r.IntN(10) == 0 {
			width = 0
		}
		n := 0
		if r.IntN(4) == 0 {
			n = r.IntN(5)
			b.WriteString(strings.Repeat(" ", n))
		}
		for n < width {
			w := corpusWords[r.IntN(len(corpusWords))]
			b.WriteString(w + " ")
			n += len(w) + 1
		}
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// corpusLs is `ls -l --color` of a large directory.
func corpusLs(r *rand.Rand, size int) []byte {
	var b strings.Builder
	colours := []string{"", "\x1b[01;34m", "\x1b[01;32m", "\x1b[01;36m", "\x1b[01;31m"}
	for b.Len() < size {
		c := colours[r.IntN(len(colours))]
		name := fmt.Sprintf("%s_%d.%s", corpusWords[r.IntN(len(corpusWords))], r.IntN(100000), []string{"go", "txt", "tar.gz", "md"}[r.IntN(4)])
		fmt.Fprintf(&b, "-rw-r--r-- 1 user staff %8d Nov %2d %02d:%02d ", r.IntN(1<<24), 1+r.IntN(30), r.IntN(24), r.IntN(60))
		if c != "" {
			b.WriteString("\x1b[0m" + c + name + "\x1b[0m\r\n")
		} else {
			b.WriteString(name + "\r\n")
		}
	}
	return []byte(b.String())
}

// corpusGrep is `grep --color=always -rn` (and compilers' diagnostics):
// SGR with an erase to the end of line after each colour change, and
// some UTF-8.
func corpusGrep(r *rand.Rand, size int) []byte {
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "\x1b[35m\x1b[Kservices/%s/file_%d.go\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K\x1b[32m\x1b[K%d\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K",
			corpusWords[r.IntN(len(corpusWords))], r.IntN(100), r.IntN(5000))
		for range r.IntN(8) {
			b.WriteString(corpusWords[r.IntN(len(corpusWords))] + " ")
		}
		b.WriteString("\x1b[01;31m\x1b[Kmatch\x1b[m\x1b[K ")
		if r.IntN(5) == 0 {
			b.WriteString("naïve café — 日本語 ✓ ")
		}
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// corpusTop is a full-screen program redrawing its screen (top, htop,
// watch): home, each row written with its colours and erased to its end,
// the rest of the screen erased.
func corpusTop(r *rand.Rand, size, rows int) []byte {
	var b strings.Builder
	b.WriteString("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
	for b.Len() < size {
		b.WriteString("\x1b[H")
		fmt.Fprintf(&b, "top - %02d:%02d:%02d up 3 days,  load average: %.2f, %.2f\x1b[K\r\n", r.IntN(24), r.IntN(60), r.IntN(60), r.Float64()*4, r.Float64()*4)
		b.WriteString("\x1b[7m  PID USER      PR  NI    VIRT    RES  %CPU  COMMAND\x1b[m\x1b[K\r\n")
		for y := 2; y < rows-1; y++ {
			if r.IntN(3) == 0 {
				b.WriteString("\x1b[1m")
			}
			fmt.Fprintf(&b, "%5d user      20   0 %7d %6d %5.1f  %s\x1b[m\x1b[K", r.IntN(99999), r.IntN(1<<22), r.IntN(1<<20), r.Float64()*100, corpusWords[r.IntN(len(corpusWords))])
			if y < rows-2 {
				b.WriteString("\r\n")
			}
		}
		b.WriteString("\x1b[J")
	}
	b.WriteString("\x1b[?25h\x1b[?1049l")
	return []byte(b.String())
}

// corpusVim is an editor scrolling a file in the alternate screen: a
// scroll region above the status line, lines inserted at its bottom,
// the status line and the cursor redrawn after each.
func corpusVim(r *rand.Rand, size, rows int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "\x1b[?1049h\x1b[?1h\x1b=\x1b[H\x1b[2J\x1b[1;%dr", rows-1)
	for n := 1; b.Len() < size; n++ {
		fmt.Fprintf(&b, "\x1b[%d;1H\n", rows-1) // scroll the region by one
		fmt.Fprintf(&b, "\x1b[33m%4d \x1b[m", n)
		for range r.IntN(10) {
			w := corpusWords[r.IntN(len(corpusWords))]
			if r.IntN(4) == 0 {
				fmt.Fprintf(&b, "\x1b[38;5;%dm%s\x1b[m ", r.IntN(256), w)
			} else {
				b.WriteString(w + " ")
			}
		}
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[7m file.go [+] %d,1 \x1b[m\x1b[K\x1b[%d;6H", rows, n, rows-1)
	}
	b.WriteString("\x1b[r\x1b[?1l\x1b>\x1b[?1049l")
	return []byte(b.String())
}

type corpus struct {
	name string
	data []byte
}

// corpora are the benchmarks' inputs, size bytes each, for a screen of
// rows lines.
func corpora(size, rows int) []corpus {
	r := rand.New(rand.NewPCG(1, 2))
	return []corpus{
		{"cat", corpusCat(r, size)},
		{"ls-l", corpusLs(r, size)},
		{"grep", corpusGrep(r, size)},
		{"top", corpusTop(r, size, rows)},
		{"vim", corpusVim(r, size, rows)},
	}
}
