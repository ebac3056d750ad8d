package app

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// resumeQuery is how a client that read up to c.pos of its stream comes
// back.
func resumeQuery(name string, c *client) map[string][]string {
	return session(name, "stream", c.connected.Stream, "offset", strconv.FormatInt(c.pos, 10))
}

// TestReattachReplaysExactlyWhatWasMissed: a client that leaves and comes
// back with its stream offset gets exactly the bytes produced meanwhile,
// no gap and no duplicate, then the live output; a fresh client gets the
// whole scrollback.
func TestReattachReplaysExactlyWhatWasMissed(t *testing.T) {
	h := startHost(t)
	a := h.dial(session("re"), nil)
	// b stays attached the whole time: it sees every byte, from offset 0.
	b := h.dial(session("re"), nil)
	a.run("echo fir''st", "first")
	b.waitOutput(0, "first")
	a.close()

	// Output produced while a is away, driven by b.
	b.run("seq 1 300; echo do''ne", "done")
	if int64(len(b.out)) != b.pos || b.connected.Offset != 0 {
		t.Fatalf("b's bookkeeping: %d bytes, pos %d, from %d", len(b.out), b.pos, b.connected.Offset)
	}
	missed := b.out[a.pos:]

	a2 := h.dial(resumeQuery("re", a), nil)
	if got := a2.connected; got.Created || !got.HasScrollback || got.ScrollbackTruncated || got.Offset != a.pos || got.Stream != a.connected.Stream {
		t.Fatalf("connected on resume = %+v, want a replay from %d", got, a.pos)
	}
	a2.pump(10*time.Second, "the replay", func() bool { return len(a2.out) >= len(missed) })
	if !bytes.Equal(a2.out, missed) {
		t.Fatalf("replay differs from what was missed:\n got %q\nwant %q", a2.out, missed)
	}
	// Then live output, the same for both.
	mark := len(a2.out)
	bmark := len(b.out)
	a2.send("echo li''ve\r")
	a2.waitOutput(mark, "live")
	b.waitOutput(bmark, "live")
	a2.pump(5*time.Second, "prompt", func() bool { return bytes.HasSuffix(a2.out, []byte(testPrompt)) })
	b.pump(5*time.Second, "prompt", func() bool { return bytes.HasSuffix(b.out, []byte(testPrompt)) })
	if !bytes.Equal(a2.out, b.out[a.pos:]) || a2.pos != b.pos {
		t.Errorf("after the replay the two clients diverge:\n a %q\n b %q", a2.out, b.out[a.pos:])
	}

	// A fresh client (no stream) gets everything held.
	c := h.dial(session("re"), nil)
	if !c.connected.HasScrollback || c.connected.ScrollbackTruncated || c.connected.Offset != 0 {
		t.Errorf("fresh client's connected = %+v, want the whole scrollback", c.connected)
	}
	c.pump(10*time.Second, "the whole scrollback", func() bool { return len(c.out) >= len(b.out) })
	if !bytes.Equal(c.out, b.out) {
		t.Errorf("fresh client's replay differs from the stream")
	}
	// A client of an older stream (a previous shell) is treated as fresh.
	d := h.dial(session("re", "stream", "0123456789abcdef", "offset", "5"), nil)
	if d.connected.Offset != 0 || !d.connected.HasScrollback {
		t.Errorf("client of another stream: connected = %+v, want the whole scrollback", d.connected)
	}
	// A client at the live end has nothing to replay.
	e := h.dial(resumeQuery("re", b), nil)
	if e.connected.HasScrollback || e.connected.Offset != b.pos {
		t.Errorf("client at the live end: connected = %+v", e.connected)
	}
}

// TestReattachAfterMoreThanTheRing: a client that missed more than the
// scrollback holds is told so, and gets exactly what the ring holds.
func TestReattachAfterMoreThanTheRing(t *testing.T) {
	const ringKB = 16
	h := startHost(t, withEnv("TERMINAL_SCROLLBACK_KB", strconv.Itoa(ringKB)))
	a := h.dial(session("trunc"), nil)
	b := h.dial(session("trunc"), nil)
	a.run("echo fir''st", "first")
	b.waitOutput(0, "first")
	a.close()
	b.run("seq 1 20000 | tail -c 60000; echo do''ne", "done") // well over 16 KiB
	if len(b.out)-int(a.pos) <= ringKB<<10 {
		t.Fatalf("only %d bytes produced while away; the test needs more than the ring", len(b.out)-int(a.pos))
	}
	a2 := h.dial(resumeQuery("trunc", a), nil)
	want := b.out[len(b.out)-ringKB<<10:]
	if got := a2.connected; !got.ScrollbackTruncated || !got.HasScrollback || got.Offset != b.pos-int64(len(want)) {
		t.Fatalf("connected = %+v, want truncated, from %d", got, b.pos-int64(len(want)))
	}
	a2.pump(10*time.Second, "the replay", func() bool { return len(a2.out) >= len(want) })
	if !bytes.Equal(a2.out, want) {
		t.Errorf("replay is not the ring's content")
	}
	// A fresh client is told the start was lost too.
	if c := h.dial(session("trunc"), nil); !c.connected.ScrollbackTruncated {
		t.Errorf("fresh client's connected = %+v, want scrollback_truncated", c.connected)
	}
}
