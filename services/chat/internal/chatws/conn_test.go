package chatws

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// backlog is a slow client's backlog: frames of the sizes that take each
// of writeFrames' paths (larger than its buffer, several per buffer, a
// few per buffer), numbered so that the client can check their order.
func backlog(frames int) []room.Frame {
	sizes := []int{64 << 10, 1000, 20 << 10, 5}
	out := make([]room.Frame, frames)
	for i := range out {
		p := []byte(strconv.Itoa(i) + ":")
		out[i] = room.Frame{Data: append(p, bytes.Repeat([]byte{'a' + byte(i%26)}, sizes[i%len(sizes)])...)}
	}
	return out
}

// backlogBytes is how many bytes frames hold.
func backlogBytes(frames []room.Frame) int {
	n := 0
	for _, f := range frames {
		n += len(f.Data)
	}
	return n
}

// gather queues frames on c while the test holds the pool's only writer
// (as if it ran), so that they wait together, c once in the ready queue;
// the test then serves the queue itself (pool.run, or pool.pop and
// c.flush), synchronously.
func gather(t *testing.T, pool *writers, c *conn, frames []room.Frame) {
	t.Helper()
	pool.mu.Lock()
	pool.running = pool.max
	pool.mu.Unlock()
	for _, f := range frames {
		c.Send(f)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.max != 1 || len(pool.ready)-pool.head != 1 || pool.ready[pool.head] != c {
		t.Fatalf("ready queue %v (head %d), want the connection alone", pool.ready, pool.head)
	}
}

// pacedReader is a client that reads slowly: at most chunk bytes per
// read, one read per every.
type pacedReader struct {
	nc    net.Conn
	chunk int
	every time.Duration
}

func (r pacedReader) Read(p []byte) (int, error) {
	time.Sleep(r.every) // the client's pace, not a synchronisation
	return r.nc.Read(p[:min(len(p), r.chunk)])
}

// readBacklog reads frames from r until it has read all of want, in order,
// or (when closeCode is not 0) a close frame, whose code it checks; it
// returns how many of want it read. Waiting for no close, it fails when c
// is torn down first.
func readBacklog(t *testing.T, r *bufio.Reader, client net.Conn, c *conn, want []room.Frame, closeCode int) int {
	t.Helper()
	for i := 0; ; i++ {
		if i == len(want) && closeCode == 0 {
			return i
		}
		select {
		case <-c.ended:
			if closeCode == 0 {
				t.Fatalf("the connection was torn down after %d of %d frames", i, len(want))
			}
		default:
		}
		f := readFrame(t, r, client, time.Now().Add(10*time.Second))
		if f.opcode == 8 {
			if closeCode == 0 || len(f.payload) < 2 || int(binary.BigEndian.Uint16(f.payload)) != closeCode {
				t.Fatalf("after %d frames: close %q, want close %d", i, f.payload, closeCode)
			}
			return i
		}
		if i == len(want) {
			t.Fatalf("frame after the %d frames, want close %d", i, closeCode)
		}
		if f.opcode != 1 || !bytes.Equal(f.payload, want[i].Data) {
			t.Fatalf("frame %d: opcode %d, %d bytes starting %q; want %d bytes starting %q", i, f.opcode,
				len(f.payload), f.payload[:min(len(f.payload), 8)], len(want[i].Data), want[i].Data[:8])
		}
	}
}

// A socket that cannot take its backlog at once costs its slow goroutine
// at most a write buffer, not a copy of the backlog: the frames' data is
// shared by every socket of the session, so a copy per slow socket would
// multiply it.
func TestWritersSlowPathDoesNotCopyBacklog(t *testing.T) {
	pool := newWriters(1)
	c, client := pair(t, pool)
	want := backlog(64) // 1.4 MiB: far more than the loopback buffers hold unread
	gather(t, pool, c, want)
	if got := pool.pop(); got != c {
		t.Fatalf("popped %p, want the connection %p", got, c)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	buf := c.flush(make([]byte, 0, writeChunk))
	runtime.ReadMemStats(&after)
	pool.run() // the rest of the held writer's turn: it ends
	if cap(buf) < writeChunk {
		t.Errorf("the writer got back a buffer of %d bytes, want %d", cap(buf), writeChunk)
	}
	if got, total := after.TotalAlloc-before.TotalAlloc, backlogBytes(want); got > 256<<10 {
		t.Errorf("the turn allocated %d bytes for a backlog of %d", got, total)
	}
	// The client, reading, gets every frame in order, then later ones.
	r := bufio.NewReader(client)
	readBacklog(t, r, client, c, want, 0)
	c.Send(room.Frame{Data: []byte("later")})
	if f := readFrame(t, r, client, time.Now().Add(10*time.Second)); string(f.payload) != "later" {
		t.Fatalf("after the backlog: %q, want later", f.payload)
	}
}

// The write deadline bounds each write, as documented ("a write that takes
// over 10 s closes the socket"), not the whole backlog: a client that reads
// steadily, too slowly to take its backlog within one deadline, keeps its
// socket and gets every frame.
func TestWritersSlowClientKeptWhileItReads(t *testing.T) {
	pool := newWriters(1)
	c, client := pair(t, pool)
	c.timeout = time.Second
	want := backlog(64) // 1.4 MiB
	gather(t, pool, c, want)
	pool.run() // c's turn: what the socket does not take goes to a slow goroutine
	// 64 KiB per 100 ms: over 2 s for the backlog, while a write (at most
	// 64 KiB) finishes in one or two reads.
	r := bufio.NewReaderSize(pacedReader{nc: client, chunk: 64 << 10, every: 100 * time.Millisecond}, 64<<10)
	readBacklog(t, r, client, c, want, 0)
	c.Send(room.Frame{Data: []byte("later")})
	if f := readFrame(t, r, client, time.Now().Add(10*time.Second)); string(f.payload) != "later" {
		t.Fatalf("after the backlog: %q, want later", f.payload)
	}
}

// A close (shutdown's 1001, or 4001) that comes while a slow goroutine
// writes a backlog goes out after the write in progress, not after the
// whole backlog: with a deadline per write, a client reading slowly would
// otherwise hold the connection (and the shutdown) for as many deadlines
// as the backlog has writes.
func TestWritersCloseDuringSlowWrite(t *testing.T) {
	pool := newWriters(1)
	c, client := pair(t, pool)
	want := backlog(64)
	gather(t, pool, c, want)
	pool.run()
	c.close(1001)
	r := bufio.NewReader(client)
	if n := readBacklog(t, r, client, c, want, 1001); n == len(want) {
		t.Fatalf("the close came after all %d frames of the backlog, not after the write in progress", n)
	}
	waitTornDown(t, c)
}

// stallingWriter takes its writes until the stall-th, of which it takes
// half and fails with errWouldBlock, as a full socket does.
type stallingWriter struct {
	bytes.Buffer
	writes, stall int
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == w.stall {
		n, _ := w.Buffer.Write(p[:len(p)/2])
		return n, errWouldBlock
	}
	return w.Buffer.Write(p)
}

// Whichever write stalls (a buffer of small frames, a large frame's header
// or its data, the last one), what was written, its unwritten end and what
// writeFrames says was to follow make up the whole stream, as the slow
// goroutine writes it.
func TestWriteFramesResumesAfterAStall(t *testing.T) {
	frames := backlog(12)
	var whole bytes.Buffer
	if _, _, err := writeFrames(&whole, make([]byte, 0, writeChunk), frames, nil); err != nil {
		t.Fatal(err)
	}
	for stall := 1; ; stall++ {
		w := stallingWriter{stall: stall}
		var tail []byte
		nb := writerFunc(func(p []byte) (int, error) {
			n, err := w.Write(p)
			if err != nil {
				tail = p[n:]
			}
			return n, err
		})
		buf, rest, err := writeFrames(nb, make([]byte, 0, writeChunk), frames, nil)
		if err == nil {
			if stall < 4 {
				t.Fatalf("only %d writes", stall-1)
			}
			break
		}
		if !errors.Is(err, errWouldBlock) {
			t.Fatal(err)
		}
		w.Buffer.Write(tail)
		w.Buffer.Write(rest.data)
		if _, _, err := writeFrames(&w.Buffer, buf[:0], rest.frames, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), whole.Bytes()) {
			t.Fatalf("stalled at write %d: %d bytes resumed differ from the %d of the whole stream", stall, w.Len(), whole.Len())
		}
	}
	// Stopped at a boundary, it writes nothing more.
	var stop atomic.Bool
	stop.Store(true)
	var none bytes.Buffer
	if _, _, err := writeFrames(&none, make([]byte, 0, writeChunk), frames, &stop); !errors.Is(err, errClosing) || none.Len() != 0 {
		t.Fatalf("stopped: %v, %d bytes written", err, none.Len())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// replayDuring starts c with a replay that puts lines 1..3, lets the test
// act (during), then puts lines 4 and 5, unless c closes.
func replayDuring(t *testing.T, c *conn, during func()) {
	t.Helper()
	head := []room.Frame{{Data: []byte("connected")}}
	line := func(n int64) room.Frame { return room.Frame{Line: n, Data: []byte("line " + strconv.FormatInt(n, 10))} }
	c.start(head, func(put func(...room.Frame) error) (int64, error) {
		if err := put(line(1), line(2), line(3)); err != nil {
			return 0, err
		}
		during()
		return 5, put(line(4), line(5))
	})
}

// Frames sent during the replay follow it, those with a line it replayed
// skipped; pings wait for it too.
func TestConnReplayThenLive(t *testing.T) {
	c, client := unstartedPair(t, newWriters(2))
	replayDuring(t, c, func() {
		for _, n := range []int64{4, 5, 6} {
			c.Send(room.Frame{Line: n, Data: []byte("live " + strconv.FormatInt(n, 10))})
		}
		c.Send(room.Frame{Data: []byte("unlogged")})
		_ = c.pingReceived("p")
	})
	r := bufio.NewReader(client)
	deadline := time.Now().Add(10 * time.Second)
	want := []wsFrame{
		{1, []byte("connected")},
		{1, []byte("line 1")},
		{1, []byte("line 2")},
		{1, []byte("line 3")},
		{1, []byte("line 4")},
		{1, []byte("line 5")},
		{0xA, []byte("p")},
		{1, []byte("live 6")},
		{1, []byte("unlogged")},
	}
	for i, w := range want {
		if f := readFrame(t, r, client, deadline); f.opcode != w.opcode || !bytes.Equal(f.payload, w.payload) {
			t.Fatalf("frame %d: opcode %d %q, want %d %q", i, f.opcode, f.payload, w.opcode, w.payload)
		}
	}
}

// A close during the replay ends it: the close frame follows what was
// written, and the connection is torn down.
func TestConnCloseDuringReplay(t *testing.T) {
	c, client := unstartedPair(t, newWriters(2))
	replayDuring(t, c, func() { c.close(CloseTooSlow) })
	r := bufio.NewReader(client)
	deadline := time.Now().Add(10 * time.Second)
	for i, w := range []string{"connected", "line 1", "line 2", "line 3"} {
		if f := readFrame(t, r, client, deadline); f.opcode != 1 || string(f.payload) != w {
			t.Fatalf("frame %d: opcode %d %q, want %q", i, f.opcode, f.payload, w)
		}
	}
	if f := readFrame(t, r, client, deadline); f.opcode != 8 || binary.BigEndian.Uint16(f.payload) != CloseTooSlow {
		t.Fatalf("after the replayed lines: opcode %d %q, want close %d", f.opcode, f.payload, CloseTooSlow)
	}
	waitTornDown(t, c)
}

// A client that stopped reading, whose queue overflows while its socket is
// full and a slow write is in progress, gets the frames written so far,
// then 4001, once it reads again.
func TestWritersTooSlowWithFullSocket(t *testing.T) {
	c, client := pair(t, newWriters(1))
	for _, f := range backlog(64) {
		c.Send(f)
	}
	for i := 0; !c.isClosing(); i++ {
		if i > 10*QueueSize {
			t.Fatal("the queue never overflowed")
		}
		c.Send(room.Frame{Data: []byte("small " + strconv.Itoa(i))})
	}
	r := bufio.NewReader(client)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		f := readFrame(t, r, client, deadline)
		if f.opcode == 1 {
			continue
		}
		if f.opcode != 8 || binary.BigEndian.Uint16(f.payload) != CloseTooSlow || !bytes.Contains(f.payload, []byte("after_line")) {
			t.Fatalf("after %d frames: opcode %d %q, want close %d", i, f.opcode, f.payload, CloseTooSlow)
		}
		break
	}
	waitTornDown(t, c)
}

// The ready queue is FIFO through its compactions (pushes and pops
// interleaved, thousands waiting), and a writer ends when it is empty.
func TestWritersQueueOrder(t *testing.T) {
	w := newWriters(1)
	w.running = 1 // as if a writer ran: push starts none
	conns := make([]*conn, 21000)
	for i := range conns {
		conns[i] = &conn{}
	}
	next, popped := 0, 0
	pop := func() {
		if got := w.pop(); got != conns[popped] {
			t.Fatalf("pop %d: got another connection", popped)
		}
		popped++
	}
	for next < len(conns) {
		for range 3 {
			w.push(conns[next])
			next++
		}
		pop()
		if next%1500 == 0 {
			for popped < next-100 {
				pop()
			}
		}
	}
	for popped < len(conns) {
		pop()
	}
	if got := w.pop(); got != nil || w.running != 0 || w.head != 0 || len(w.ready) != 0 {
		t.Fatalf("empty queue: pop %v, running %d, head %d, %d entries", got, w.running, w.head, len(w.ready))
	}
}
