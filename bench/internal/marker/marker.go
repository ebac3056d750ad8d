// Package marker finds a marker string in a stream of terminal output that
// arrives in pieces of any size, so a marker split across WebSocket frames
// or PTY reads is still found, and counts the bytes up to its end.
package marker

import "bytes"

// Scanner looks for one marker in a stream fed to it piece by piece.
type Scanner struct {
	marker []byte
	tail   []byte // the last len(marker)-1 bytes seen, at most
	joined []byte // scratch: tail and the start of the next piece
	total  int64  // bytes fed so far
	end    int64  // stream offset just past the marker; -1 until found
}

// New returns a scanner for m, which must not be empty.
func New(m string) *Scanner {
	if m == "" {
		panic("marker: empty marker")
	}
	return &Scanner{marker: []byte(m), tail: make([]byte, 0, 2*len(m)), end: -1}
}

// Feed scans the next piece of the stream. It returns how many bytes of p
// come before the marker's end, and whether the marker has ended in p (or
// earlier): once found, Feed keeps reporting found and consumes nothing.
func (s *Scanner) Feed(p []byte) (n int, found bool) {
	if s.end >= 0 {
		return 0, true
	}
	k := len(s.marker) - 1
	// A marker that starts in the tail ends within p's first k bytes.
	if len(s.tail) > 0 {
		head := p[:min(k, len(p))]
		s.joined = append(append(s.joined[:0], s.tail...), head...)
		if i := bytes.Index(s.joined, s.marker); i >= 0 {
			n = i + len(s.marker) - len(s.tail)
			s.total += int64(n)
			s.end = s.total
			return n, true
		}
	}
	if i := bytes.Index(p, s.marker); i >= 0 {
		n = i + len(s.marker)
		s.total += int64(n)
		s.end = s.total
		return n, true
	}
	s.total += int64(len(p))
	if len(p) >= k {
		s.tail = append(s.tail[:0], p[len(p)-k:]...)
	} else {
		s.tail = append(s.tail, p...)
		if over := len(s.tail) - k; over > 0 {
			s.tail = append(s.tail[:0], s.tail[over:]...)
		}
	}
	return len(p), false
}

// Found says whether the marker has been seen.
func (s *Scanner) Found() bool { return s.end >= 0 }

// Bytes is the length of the stream up to the marker's end once found,
// else of everything fed.
func (s *Scanner) Bytes() int64 { return s.total }
