package chatws

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
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
	c := newConn(nil, nil, make(chan struct{}, 1), func() { cancelled = true })
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
	if err := writeFrames(&w, frames); err != nil {
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

// A write to a client that does not read gives its slot back after
// slotHold and completes once the client reads; the slot is free for the
// others meanwhile.
func TestSlotWriterReleasesForSlowClient(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	slots := make(chan struct{}, 1)
	w := slotWriter{slots: slots, nc: server}
	w.acquire()
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("hello"))
		done <- err
	}()
	// Another writer gets the slot while the first is blocked.
	select {
	case slots <- struct{}{}:
		<-slots
	case <-time.After(5 * time.Second):
		t.Fatal("the slot was not given back by the blocked write")
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
	w.release()
	if len(slots) != 0 {
		t.Errorf("%d slots held after release", len(slots))
	}
}
