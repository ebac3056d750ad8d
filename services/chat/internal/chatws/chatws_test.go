package chatws

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// A client whose queue is full is closed with CloseTooSlow at the next
// frame, its queue dropped; frames after that are dropped without
// blocking. (No writer runs here: until start, frames only wait.)
func TestConnOverflowClosesTooSlow(t *testing.T) {
	cancelled := false
	c := newConn(nil, nil, nil, func() { cancelled = true })
	for i := range QueueSize {
		c.Send(room.ErrorFrame("frame " + strconv.Itoa(i)))
	}
	if c.isClosing() {
		t.Fatal("closed before the queue overflowed")
	}
	if len(c.q) != QueueSize {
		t.Fatalf("queue holds %d frames, want %d", len(c.q), QueueSize)
	}
	c.Send(room.ErrorFrame("one too many"))
	if !c.isClosing() {
		t.Fatal("not closed after the overflow")
	}
	if c.code != CloseTooSlow {
		t.Errorf("close code %d, want %d", c.code, CloseTooSlow)
	}
	if !cancelled {
		t.Error("the command context was not cancelled")
	}
	c.Send(room.ErrorFrame("after")) // must not block
	if len(c.q) != 0 {
		t.Errorf("queue holds %d frames after the close, want 0", len(c.q))
	}
}

func TestCheckImages(t *testing.T) {
	ok := room.Image{Type: "image"}
	ok.Source.Type, ok.Source.MediaType, ok.Source.Data = "base64", "image/png", "aGVsbG8="
	if err := checkImages([]room.Image{ok}); err != nil {
		t.Errorf("valid image: %v", err)
	}
	for name, mod := range map[string]func(*room.Image){
		"not base64":  func(im *room.Image) { im.Source.Data = "not base64!" },
		"empty data":  func(im *room.Image) { im.Source.Data = "" },
		"media type":  func(im *room.Image) { im.Source.MediaType = "text/plain" },
		"source type": func(im *room.Image) { im.Source.Type = "url" },
		"block type":  func(im *room.Image) { im.Type = "text" },
	} {
		im := ok
		mod(&im)
		if err := checkImages([]room.Image{ok, im}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// countingWriter records the writes it gets.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// Frames are encoded as final text frames (RFC 6455 §5.2, unmasked), with
// the 7-bit, 16-bit and 64-bit lengths at their bounds, the small ones
// together in one write.
func TestWriteFrames(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 127, 0xFFFF, 0x10000, writeChunk + 5}
	var frames []room.Frame
	for i, n := range sizes {
		frames = append(frames, room.Frame{Data: bytes.Repeat([]byte{byte('a' + i)}, n)})
	}
	var w countingWriter
	if _, _, err := writeFrames(&w, make([]byte, 0, writeChunk), frames, nil); err != nil {
		t.Fatal(err)
	}
	b := w.Bytes()
	for i, n := range sizes {
		if len(b) < 2 || b[0] != 0x81 {
			t.Fatalf("frame %d: header %x, want 0x81 first", i, b[:min(len(b), 2)])
		}
		got, hdr := int(b[1]), 2
		switch got {
		case 126:
			got, hdr = int(binary.BigEndian.Uint16(b[2:4])), 4
		case 127:
			got, hdr = int(binary.BigEndian.Uint64(b[2:10])), 10
		}
		if got != n {
			t.Fatalf("frame %d: length %d, want %d", i, got, n)
		}
		if n >= 126 && hdr == 2 || n > 0xFFFF && hdr != 10 || n < 126 && hdr != 2 {
			t.Errorf("frame %d (%d bytes): %d-byte header", i, n, hdr)
		}
		if !bytes.Equal(b[hdr:hdr+n], frames[i].Data) {
			t.Fatalf("frame %d: payload differs", i)
		}
		b = b[hdr+n:]
	}
	if len(b) != 0 {
		t.Errorf("%d bytes after the frames", len(b))
	}
	// The frames up to 127 bytes go in one write; the three larger than
	// the buffer (0xFFFF, 0x10000, writeChunk+5) take two each: header,
	// then data.
	if w.writes != 7 {
		t.Errorf("%d writes, want 7", w.writes)
	}
}

// pair returns a conn writing to one end of a loopback TCP connection,
// started with nothing to write, and the other end. The conn's send
// buffer is small, so that a client that does not read fills it quickly.
// (A small receive buffer would not do: under one loopback segment, the
// receiver never opens its window and the stream stalls.)
func pair(t *testing.T, pool *writers) (*conn, *net.TCPConn) {
	t.Helper()
	c, client := unstartedPair(t, pool)
	c.start(nil, nil)
	return c, client
}

// unstartedPair is pair without the start.
func unstartedPair(t *testing.T, pool *writers) (*conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			s = nil
		}
		accepted <- s
	}()
	client, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	if err := server.(*net.TCPConn).SetWriteBuffer(32 << 10); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	c := newConn(nil, slog.New(slog.DiscardHandler), pool, func() {})
	c.nc, c.raw = rawConn(server)
	if c.raw == nil {
		t.Fatal("a TCP connection has no descriptor")
	}
	return c, client
}

// wsFrame is a frame as a client reads it.
type wsFrame struct {
	opcode  byte
	payload []byte
}

// readFrame reads one unmasked frame, within the deadline.
func readFrame(t *testing.T, r *bufio.Reader, nc net.Conn, deadline time.Time) wsFrame {
	t.Helper()
	if err := nc.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatalf("read frame header: %v", err)
	}
	if h[0]&0x80 == 0 || h[1]&0x80 != 0 {
		t.Fatalf("header %x: want a final, unmasked frame", h)
	}
	n := uint64(h[1])
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Fatal(err)
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Fatal(err)
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatalf("read frame payload: %v", err)
	}
	return wsFrame{opcode: h[0] & 0x0F, payload: p}
}

// A client that does not read never holds up the writers: with one
// writer, a socket whose buffers are full gets the rest of its frames from
// a goroutine of its own while another socket is served; once the client
// reads, it gets every frame, in order, and later frames still go out.
func TestWritersSlowClientDoesNotBlock(t *testing.T) {
	pool := newWriters(1)
	slow, slowClient := pair(t, pool)
	fast, fastClient := pair(t, pool)
	big := bytes.Repeat([]byte("x"), 64<<10)
	const bigFrames = 64 // 4 MiB: more than the loopback buffers hold
	for i := range bigFrames {
		slow.Send(room.Frame{Data: append([]byte(strconv.Itoa(i)+":"), big...)})
	}
	fast.Send(room.Frame{Data: []byte(`{"type":"hello"}`)})
	deadline := time.Now().Add(10 * time.Second)
	if f := readFrame(t, bufio.NewReader(fastClient), fastClient, deadline); f.opcode != 1 || string(f.payload) != `{"type":"hello"}` {
		t.Fatalf("fast client got opcode %d %q", f.opcode, f.payload)
	}
	slow.Send(room.Frame{Data: []byte("last")})
	r := bufio.NewReader(slowClient)
	for i := range bigFrames {
		f := readFrame(t, r, slowClient, deadline)
		if want := strconv.Itoa(i) + ":"; f.opcode != 1 || !bytes.HasPrefix(f.payload, []byte(want)) || len(f.payload) != len(want)+len(big) {
			t.Fatalf("frame %d: opcode %d, %d bytes starting %q", i, f.opcode, len(f.payload), f.payload[:min(len(f.payload), 8)])
		}
	}
	if f := readFrame(t, r, slowClient, deadline); string(f.payload) != "last" {
		t.Fatalf("after the burst: %q, want last", f.payload)
	}
	slow.Send(room.Frame{Data: []byte("later")})
	if f := readFrame(t, r, slowClient, deadline); string(f.payload) != "later" {
		t.Fatalf("after the slow write: %q, want later", f.payload)
	}
}

// Frames that arrive while a connection waits for a writer go out
// together, in order, in one turn; pings and pongs go before them.
func TestWritersGatherWaitingFrames(t *testing.T) {
	pool := newWriters(1)
	c, client := pair(t, pool)
	// Hold the only writer slot so that c waits in the queue.
	pool.mu.Lock()
	pool.running = pool.max
	pool.mu.Unlock()
	c.Send(room.Frame{Data: []byte("one")})
	c.Send(room.Frame{Data: []byte("two")})
	_ = c.pingReceived("p")
	c.Send(room.Frame{Data: []byte("three")})
	pool.mu.Lock()
	waiting := len(pool.ready) - pool.head
	pool.mu.Unlock()
	if waiting != 1 {
		t.Fatalf("%d queue entries for one connection, want 1", waiting)
	}
	go pool.run() // the writer the slot was held for
	r := bufio.NewReader(client)
	deadline := time.Now().Add(10 * time.Second)
	want := []wsFrame{{0xA, []byte("p")}, {1, []byte("one")}, {1, []byte("two")}, {1, []byte("three")}}
	for i, w := range want {
		if f := readFrame(t, r, client, deadline); f.opcode != w.opcode || !bytes.Equal(f.payload, w.payload) {
			t.Fatalf("frame %d: opcode %d %q, want %d %q", i, f.opcode, f.payload, w.opcode, w.payload)
		}
	}
	// With nothing left the writer ends and gives its slot back.
	for {
		pool.mu.Lock()
		running := pool.running
		pool.mu.Unlock()
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers still counted after the queue emptied", running)
		}
		runtime.Gosched()
	}
}

// A close sends the close frame with its code and reason, then ends the
// connection; frames sent after it are dropped.
func TestWritersClose(t *testing.T) {
	c, client := pair(t, newWriters(2))
	c.close(CloseTooSlow)
	c.Send(room.Frame{Data: []byte("dropped")})
	r := bufio.NewReader(client)
	f := readFrame(t, r, client, time.Now().Add(10*time.Second))
	if f.opcode != 8 || len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != CloseTooSlow {
		t.Fatalf("got opcode %d %q, want a close with %d", f.opcode, f.payload, CloseTooSlow)
	}
	if !bytes.Contains(f.payload, []byte("after_line")) {
		t.Errorf("close reason %q does not say how to resume", f.payload[2:])
	}
	waitTornDown(t, c)
}

// The writers leave a processor to the goroutines that wait on I/O (see
// writerCount), but there is always one.
func TestWriterCountLeavesAProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, want := range map[int]int{1: 1, 2: 1, 4: 3, 16: 15} {
		runtime.GOMAXPROCS(procs)
		if got := writerCount(); got != want {
			t.Errorf("GOMAXPROCS %d: %d writers, want %d", procs, got, want)
		}
	}
}
