package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// frame builds one server-to-client WebSocket frame (unmasked unless mask).
func frame(opcode byte, payload []byte, mask bool) []byte {
	b := []byte{0x80 | opcode}
	m := byte(0)
	if mask {
		m = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, m|byte(n))
	case n < 1<<16:
		b = append(b, m|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, m|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if mask {
		b = append(b, 1, 2, 3, 4)
	}
	return append(b, payload...)
}

// pipeTunnel returns a tunnel whose backend side reads src and whose
// client side writes into a pipe read by the returned reader.
func pipeTunnel(src []byte) (*tunnel, net.Conn) {
	clientSide, far := net.Pipe()
	t := &tunnel{br: bufio.NewReader(bytes.NewReader(src)), clientW: clientSide}
	t.bw = bufio.NewWriter(clientSide)
	return t, far
}

func TestCopyFramesKeepsFramesWhole(t *testing.T) {
	var in []byte
	in = append(in, frame(0x1, []byte("hello"), false)...)
	in = append(in, frame(0x2, bytes.Repeat([]byte{7}, 300), false)...)
	in = append(in, frame(0x2, bytes.Repeat([]byte{9}, 70000), false)...)
	in = append(in, frame(0x9, nil, false)...)
	in = append(in, frame(0x1, []byte("masked"), true)...)
	tn, far := pipeTunnel(in)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(far)
		got <- b
	}()
	err := tn.copyFrames()
	if !errors.Is(err, io.EOF) {
		t.Errorf("copyFrames ended with %v, want EOF", err)
	}
	_ = tn.clientW.Close()
	if out := <-got; !bytes.Equal(out, in) {
		t.Errorf("copied %d bytes, want the %d sent, unchanged", len(out), len(in))
	}
}

func TestCloseFrameGoesBetweenFrames(t *testing.T) {
	tn, far := pipeTunnel(frame(0x1, []byte("first"), false))
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(far)
		done <- b
	}()
	if err := tn.copyFrames(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	tn.sendClose(1008, "credential revoked")
	_ = tn.clientW.Close()
	out := <-done
	want := append(frame(0x1, []byte("first"), false), 0x88, byte(2+len("credential revoked")), 0x03, 0xf0)
	want = append(want, "credential revoked"...)
	if !bytes.Equal(out, want) {
		t.Errorf("client received %x, want %x", out, want)
	}
	// After the close frame nothing more is written.
	if err := tn.copyFrames(); err == nil {
		t.Error("frames copied after the close frame")
	}
}

func TestDropCookie(t *testing.T) {
	tests := map[string]string{
		"svc_auth=x":                   "",
		"a=1; svc_auth=x; b=2":         "a=1; b=2",
		"svc_auth_other=1; svc_auth=2": "svc_auth_other=1",
		"theme=dark":                   "theme=dark",
		"  svc_auth=x ;  keep=yes ; ":  "keep=yes",
	}
	for in, want := range tests {
		if got := string(dropCookie([]byte(in), CookieName)); got != want {
			t.Errorf("dropCookie(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCopyFrames(f *testing.F) {
	f.Add(frame(0x1, []byte("hi"), false))
	f.Add(append(frame(0x2, make([]byte, 200), false), frame(0x8, []byte{3, 232}, false)...))
	f.Add([]byte{0x81, 127, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		tn, far := pipeTunnel(in)
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(far)
			got <- b
		}()
		_ = tn.copyFrames()
		_ = tn.bw.Flush()
		_ = tn.clientW.Close()
		out := <-got
		// Whatever arrives is a prefix of the input: the copier never
		// invents or reorders bytes, and never writes a partial header.
		if !bytes.HasPrefix(in, out) {
			t.Fatalf("output is not a prefix of the input")
		}
	})
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, io.ErrClosedPipe
	}
	k := min(len(p), w.n)
	w.n -= k
	return k, io.ErrClosedPipe
}

func TestNoCloseFrameAfterACutFrame(t *testing.T) {
	clientSide, far := net.Pipe()
	defer far.Close()
	tn := &tunnel{br: bufio.NewReader(bytes.NewReader(frame(0x2, make([]byte, 5000), false))), clientW: clientSide}
	tn.bw = bufio.NewWriterSize(&failingWriter{n: 100}, 16)
	if err := tn.copyFrames(); err == nil {
		t.Fatal("copyFrames succeeded through a failing writer")
	}
	if !tn.midFrame {
		t.Fatal("a cut frame was not noticed")
	}
	tn.sendClose(1011, "x") // must not write: the pipe has no reader and would block
	_ = clientSide.Close()
}
