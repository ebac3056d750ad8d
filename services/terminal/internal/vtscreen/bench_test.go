package vtscreen

import (
	"fmt"
	"testing"
)

// BenchmarkWrite measures the screen's cost per byte of realistic output
// (corpus_test.go: a big `cat`, `ls -l --color`, `grep --color`, a
// full-screen redraw like top, an editor scrolling like vim), fed in the
// pieces the terminal's emulator goroutine takes (448 KiB: half the
// ring's allowed lag) and in single PTY reads (4 KiB), beside the library
// fed every byte. ns/B is nanoseconds per byte of output.
func BenchmarkWrite(b *testing.B) {
	const rows, cols = 24, 80
	for _, c := range corpora(4<<20, rows) {
		for _, chunk := range []int{448 << 10, 4 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", c.name, chunk>>10), func(b *testing.B) {
				s := New(rows, cols)
				b.SetBytes(int64(len(c.data)))
				for b.Loop() {
					for off := 0; off < len(c.data); off += chunk {
						s.Write(c.data[off:min(off+chunk, len(c.data))])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.data)), "ns/B")
			})
		}
		b.Run(c.name+"/library", func(b *testing.B) {
			s := New(rows, cols)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				_, _ = s.emu.Write(c.data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.data)), "ns/B")
		})
	}
}
