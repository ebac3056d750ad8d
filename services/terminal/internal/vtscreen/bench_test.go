package vtscreen

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkWrite measures the emulator's throughput on lines of text,
// plain and coloured, fed 32 KiB at a time as the terminal's emulator
// goroutine does (all the shortcut can skip) and 4 KiB at a time (one
// PTY read: little to skip), beside the library alone.
func BenchmarkWrite(b *testing.B) {
	var plain, colour bytes.Buffer
	for i := 0; plain.Len() < 1<<20; i++ {
		fmt.Fprintf(&plain, "line %d of the output, long enough to look like a log line\r\n", i)
		fmt.Fprintf(&colour, "\x1b[3%dmline %d\x1b[0m of the \x1b[1moutput\x1b[0m, like a log line\r\n", i%8, i)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"plain", plain.Bytes()}, {"colour", colour.Bytes()}} {
		for _, chunk := range []int{32 << 10, 4 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", c.name, chunk>>10), func(b *testing.B) {
				s := New(24, 80)
				b.SetBytes(int64(len(c.data)))
				for b.Loop() {
					for off := 0; off < len(c.data); off += chunk {
						s.Write(c.data[off:min(off+chunk, len(c.data))])
					}
				}
			})
		}
		b.Run(c.name+"/library", func(b *testing.B) {
			s := New(24, 80)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				for off := 0; off < len(c.data); off += 32 << 10 {
					_, _ = s.emu.Write(c.data[off:min(off+32<<10, len(c.data))])
				}
			}
		})
	}
}
