package scrollback

import (
	"bytes"
	"testing"
)

// model is the obvious implementation Ring must agree with.
type model struct {
	all  []byte
	size int
}

func (m *model) write(p []byte) { m.all = append(m.all, p...) }
func (m *model) start() int64   { return int64(max(0, len(m.all)-m.size)) }

// check compares every observable of r with m.
func check(t *testing.T, r *Ring, m *model) {
	t.Helper()
	if got, want := r.End(), int64(len(m.all)); got != want {
		t.Fatalf("End = %d, want %d", got, want)
	}
	if got, want := r.Start(), m.start(); got != want {
		t.Fatalf("Start = %d, want %d", got, want)
	}
	held := m.all[m.start():]
	p := make([]byte, len(held)+7)
	if n := r.ReadAt(p, r.Start()); !bytes.Equal(p[:n], held) {
		t.Fatalf("ReadAt(Start) = %q, want %q", p[:n], held)
	}
	// Every offset, with a short buffer that crosses the wrap point.
	for off := r.Start(); off < r.End(); off++ {
		q := make([]byte, 3)
		n := r.ReadAt(q, off)
		want := m.all[off:min(off+3, int64(len(m.all)))]
		if !bytes.Equal(q[:n], want) {
			t.Fatalf("ReadAt(%d) = %q, want %q", off, q[:n], want)
		}
	}
	if r.Start() > 0 {
		if n := r.ReadAt(p, r.Start()-1); n != 0 {
			t.Fatalf("ReadAt before Start copied %d bytes", n)
		}
	}
	if n := r.ReadAt(p, r.End()); n != 0 {
		t.Fatalf("ReadAt(End) copied %d bytes", n)
	}
}

func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
	}{
		{"empty", 8, nil},
		{"below capacity", 8, []string{"abc", "de"}},
		{"exactly full", 8, []string{"abcd", "efgh"}},
		{"wraps", 8, []string{"abcdef", "ghij", "k"}},
		{"write larger than the ring", 4, []string{"ab", "cdefghij"}},
		{"write of exactly the size while growing", 4, []string{"a", "bcde", "f"}},
		{"many small writes", 5, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}},
		{"size one", 1, []string{"abc", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, m := New(tt.size), &model{size: tt.size}
			check(t, r, m)
			for _, w := range tt.writes {
				r.Write([]byte(w))
				m.write([]byte(w))
				check(t, r, m)
			}
			if r.Len() > r.Size() || cap(r.buf) > r.Size() {
				t.Errorf("ring holds %d bytes with capacity %d, over its size %d", r.Len(), cap(r.buf), r.Size())
			}
		})
	}
}

// TestRingWriteDoesNotAllocateWhenFull: the PTY reader's hot path.
func TestRingWriteDoesNotAllocateWhenFull(t *testing.T) {
	r := New(1 << 20)
	chunk := bytes.Repeat([]byte("y\n"), 2048)
	for r.Len() < r.Size() {
		r.Write(chunk)
	}
	if n := testing.AllocsPerRun(100, func() { r.Write(chunk) }); n != 0 {
		t.Errorf("Write allocates %v times per call on a full ring", n)
	}
	p := make([]byte, 64<<10)
	if n := testing.AllocsPerRun(100, func() { r.ReadAt(p, r.Start()+5) }); n != 0 {
		t.Errorf("ReadAt allocates %v times per call", n)
	}
}

func FuzzRing(f *testing.F) {
	f.Add(uint8(7), []byte("hello, world, and more than seven bytes"), uint8(3))
	f.Add(uint8(1), []byte("xy"), uint8(1))
	f.Fuzz(func(t *testing.T, size uint8, data []byte, step uint8) {
		r, m := New(int(size)), &model{size: max(int(size), 1)}
		st := max(int(step), 1)
		for len(data) > 0 {
			n := min(st, len(data))
			r.Write(data[:n])
			m.write(data[:n])
			data = data[n:]
			st = st*7%13 + 1 // vary the chunk sizes
		}
		check(t, r, m)
	})
}

func BenchmarkRingWrite(b *testing.B) {
	r := New(1 << 20)
	chunk := bytes.Repeat([]byte("y\n"), 2048)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		r.Write(chunk)
	}
}
