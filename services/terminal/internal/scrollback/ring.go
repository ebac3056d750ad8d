// Package scrollback is a terminal's output history: a byte ring of fixed
// capacity addressed by absolute stream offsets (the number of bytes the
// terminal has produced before a given byte). Writers never block and never
// fail: when the ring is full the oldest bytes go. Readers keep their own
// offset and learn, by comparing it with Start, whether bytes they had not
// read yet were overwritten.
//
// A Ring is not safe for concurrent use; its owner serialises access.
package scrollback

// Ring holds the last Size() bytes written to it.
type Ring struct {
	// buf grows on demand up to size, then wraps: the byte at offset o
	// lives at buf[o%size] once full, and at buf[o] before (o < size).
	buf  []byte
	size int
	end  int64 // offset after the last byte written
}

// New returns an empty ring of capacity size bytes (at least 1). Memory is
// taken as output arrives, not up front.
func New(size int) *Ring {
	return &Ring{size: max(size, 1)}
}

// Size is the ring's capacity in bytes.
func (r *Ring) Size() int { return r.size }

// End is the stream offset after the last byte written: the total number of
// bytes ever written.
func (r *Ring) End() int64 { return r.end }

// Start is the offset of the oldest byte still held.
func (r *Ring) Start() int64 { return r.end - int64(len(r.buf)) }

// Len is the number of bytes held.
func (r *Ring) Len() int { return len(r.buf) }

// Write appends p, dropping the oldest bytes beyond the capacity. It does
// not allocate once the ring has reached its capacity.
func (r *Ring) Write(p []byte) {
	if len(p) >= r.size {
		// Only the last size bytes of p survive; the ring is full after.
		r.end += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
		if len(r.buf) < r.size {
			r.grow(r.size)
			r.buf = r.buf[:r.size]
		}
	}
	if n := len(r.buf); n < r.size {
		// Still growing: the ring is linear and end == len(buf).
		take := min(r.size-n, len(p))
		if n+take > cap(r.buf) {
			r.grow(n + take)
		}
		r.buf = append(r.buf, p[:take]...)
		r.end += int64(take)
		p = p[take:]
		if len(p) == 0 {
			return
		}
	}
	i := int(r.end % int64(r.size))
	n := copy(r.buf[i:], p)
	copy(r.buf, p[n:])
	r.end += int64(len(p))
}

// grow makes room for at least n bytes, doubling (capped at size) so that
// a growing ring allocates O(log size) times.
func (r *Ring) grow(n int) {
	c := min(max(n, 2*cap(r.buf), 4096), r.size)
	nb := make([]byte, len(r.buf), c)
	copy(nb, r.buf)
	r.buf = nb
}

// ReadAt copies into p the bytes from offset off on, as many as fit and are
// held, and returns how many it copied. An offset before Start or after End
// copies nothing; the caller checks Start first.
func (r *Ring) ReadAt(p []byte, off int64) int {
	if off < r.Start() || off >= r.end || len(p) == 0 {
		return 0
	}
	n := int(min(int64(len(p)), r.end-off))
	i := int(off % int64(r.size))
	c := copy(p[:n], r.buf[i:])
	copy(p[c:n], r.buf)
	return n
}
