package terminals

import (
	"bytes"

	"github.com/svc-code/svc-code/services/terminal/internal/vtscreen"
)

// Skipping plain-text floods (issue 18: the page must not be the
// bottleneck). A flow client that keeps N lines of scrollback
// (skip_lines=N) can never show output that is followed by more than
// N + rows lines of plain text: those lines push it out of its screen and
// its scrollback. So when such a client is behind, the server leaves out
// the front of what it has not sent yet, as long as all of it is plain,
// and sends instead the pen (the SGR sequences) that output would have
// left. The client ends on the very screen and scrollback that parsing
// every byte gives, and parses only the last lines of a flood however long
// it is.
//
// Why the result is the same. Let the client have parsed everything up to
// the cursor, with its parser in the ground state there, and let the
// output from the cursor be plain (vtscreen.PlainRun: printable text,
// TAB, CR, LF, BS, BEL, SGR and erase-in-line sequences) up to the last of
// need CR LF pairs after the skip point x. Plain text changes no mode, no
// tab stop, no scroll region and no character set; what it changes of the
// state that outlives its lines is the pen, which the skip frame restores.
// From x (a line start: it follows CR LF) the client and a client that
// parsed everything print the same lines one per row; after rows of them
// both cursors are on the last row, and after need = N + 2 rows (and a
// margin) every row of the screen and of the N lines of scrollback holds
// one of those lines in both, in the same order: the two are equal from
// there on, whatever follows.

// skipMargin is added to the lines a skip needs beyond the client's
// scrollback and twice its rows (a resize on the way).
const skipMargin = 16

// findSkipFrom looks at b, output a client has not been sent yet and that
// starts with the client's parser in its ground state, for the furthest
// point it may skip to: x > 0 is the index after the CR LF that has exactly
// need CR LF pairs after it, with everything up to the last of them plain;
// pen is the SGR sequences of b[:x] from the last reset (they set what the
// skipped output would have left). x is 0 when there is no such point:
// fewer than need+1 lines, or something not plain, which starts at bad (-1
// when b is plain up to its last CR LF). b[:from] is known to be plain
// already (from is a line start, 0 when nothing is known); plainTo is how
// far b is known to be plain now.
func findSkipFrom(b []byte, from, need int) (x int, pen []byte, bad, plainTo int) {
	// The last CR LF, and the one need pairs before it.
	last, count := -1, 0
	for i := len(b); x == 0; {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 1 {
			break
		}
		if b[j-1] == '\r' {
			if last < 0 {
				last = j + 1
			}
			if count == need {
				x = j + 1
			}
			count++
		}
		i = j
	}
	if last <= from {
		return 0, nil, -1, from
	}
	if end := vtscreen.PlainRun(b[:last], from); end < last {
		return 0, nil, end, from
	}
	if x == 0 {
		return 0, nil, -1, last
	}
	return x, vtscreen.AppendSGR(nil, b[:x]), -1, last
}

// Limits of skipping.
const (
	// MaxSkipLines bounds skip_lines (xterm.js keeps at most this many).
	MaxSkipLines = 1_000_000
	// markEvery is the distance between the parser states kept along
	// the ring.
	markEvery = 64 << 10
)

// Skip tells a skipping client that the output [From, To) is left out; Pen
// is the SGR sequences to write in its place. The next output starts at To.
type Skip struct {
	From, To int64
	Pen      []byte
}

// windowLocked is how much output the subscriber may have been sent and
// not acknowledged: the high watermark, or for a skipping one an eighth
// of it (at least 4 KiB), so that the rest of a flood waits in the ring,
// where it can be left out, instead of in the client.
func (s *Sub) windowLocked() int64 {
	if s.keep == 0 {
		return s.t.m.cfg.FlowHigh
	}
	return min(s.t.m.cfg.FlowHigh, max(s.t.m.cfg.FlowHigh/8, 4<<10))
}

// roomLocked is how much more output the subscriber may be sent now: its
// window less what it was sent and has not acknowledged (what was left
// out for it does not count).
func (s *Sub) roomLocked() int64 {
	if s.keep == 0 {
		return s.acked + s.windowLocked() - s.cursor
	}
	owed := s.cursor - s.clientAcked
	for _, sp := range s.spans {
		owed -= sp.to - max(sp.from, s.clientAcked)
	}
	return s.windowLocked() - owed
}

// skipLocked leaves out what it can of the output after the cursor: a
// plain-text run followed by more lines than the client can show (see the
// top of this file). It looks again only once another window's worth of
// output has come, and not before the cursor has passed output that is not
// plain. nil when nothing is left out.
func (s *Sub) skipLocked() *Skip {
	t := s.t
	end := t.ring.End()
	if s.keep == 0 || !s.trKnown || !s.tr.Ground() || s.cursor < s.skipBlock || end-s.skipTried < s.windowLocked() {
		return nil
	}
	s.skipTried = end
	need := s.keep + 2*max(int(t.rows), s.rows) + skipMargin
	if end-s.cursor < int64(need) {
		return nil
	}
	n := int(end - s.cursor)
	if cap(t.skipBuf) < n {
		t.skipBuf = make([]byte, n)
	}
	b := t.skipBuf[:t.ring.ReadAt(t.skipBuf[:n], s.cursor)]
	// What is known to be plain already need not be looked at again.
	from := int(max(s.plainTo-s.cursor, 0))
	x, pen, bad, plainTo := findSkipFrom(b, from, need)
	s.plainTo = s.cursor + int64(plainTo)
	if bad >= 0 {
		s.skipBlock = s.cursor + int64(bad) + 1
		return nil
	}
	if x == 0 {
		return nil
	}
	sk := &Skip{From: s.cursor, To: s.cursor + int64(x), Pen: pen}
	s.cursor = sk.To
	s.sent = max(s.sent, s.cursor)
	s.acked = max(s.acked, s.cursor) // the shell need not wait for it
	if n := len(s.spans); n > 0 && s.spans[n-1].to == sk.From {
		// Nothing was sent since the last skip (a client that does not
		// acknowledge is sent nothing more): one span, however many skips.
		s.spans[n-1].to = sk.To
	} else {
		s.spans = append(s.spans, span{sk.From, sk.To})
	}
	s.tr = vtscreen.Tracker{} // after CR LF in plain text: the ground state
	s.skips++
	s.skipped += int64(x)
	t.checkFlowLocked()
	return sk
}

// SetRows records the rows the subscriber's client asked for (its last
// resize): when clients of different sizes share a terminal, a skip must
// push out the taller one's screen too.
func (s *Sub) SetRows(rows int) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.rows = rows
}

// Skipped is how many times output was left out for the subscriber, and
// how many bytes in all.
func (s *Sub) Skipped() (skips, bytes int64) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.skips, s.skipped
}

// markLocked records the parser's state at the ring's end every markEvery
// bytes, and forgets those the ring no longer holds.
func (t *Terminal) markLocked() {
	end := t.ring.End()
	if n := len(t.marks); n == 0 || end-t.marks[n-1].at >= markEvery {
		t.marks = append(t.marks, parserMark{at: end, tr: t.tr})
	}
	i := 0
	for i < len(t.marks)-1 && t.marks[i].at < t.ring.Start() {
		i++
	}
	if i > 0 {
		t.marks = append(t.marks[:0], t.marks[i:]...)
	}
}

// parserAtLocked works out the parser's state at offset off of the stream
// from the nearest mark before it; false when the ring no longer holds
// what is needed.
func (t *Terminal) parserAtLocked(off int64) (vtscreen.Tracker, bool) {
	if off == t.ring.End() {
		return t.tr, true
	}
	var m *parserMark
	for i := range t.marks {
		if t.marks[i].at <= off && t.marks[i].at >= t.ring.Start() {
			m = &t.marks[i]
		}
	}
	if m == nil {
		return vtscreen.Tracker{}, false
	}
	tr := m.tr
	var buf [4096]byte
	for at := m.at; at < off; {
		n := t.ring.ReadAt(buf[:min(int64(len(buf)), off-at)], at)
		if n == 0 {
			return vtscreen.Tracker{}, false
		}
		tr.Scan(buf[:n])
		at += int64(n)
	}
	return tr, true
}
