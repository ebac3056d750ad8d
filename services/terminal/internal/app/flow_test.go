package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/services/terminal/internal/termws"
	"github.com/svc-code/svc-code/services/terminal/internal/vtscreen"
)

// collector reads a connection in its own goroutine, so that a test can
// keep several clients reading at once. It never fails the test itself.
type collector struct {
	ws    *websocket.Conn
	delay time.Duration // pause after each output frame: a slow reader

	mu     sync.Mutex
	frames []frame
	err    error
	done   chan struct{}
}

type frame struct {
	kind int
	data []byte
}

func collect(ws *websocket.Conn, delay time.Duration) *collector {
	c := &collector{ws: ws, delay: delay, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
			kind, msg, err := ws.ReadMessage()
			c.mu.Lock()
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			c.frames = append(c.frames, frame{kind, msg})
			c.mu.Unlock()
			if kind == websocket.BinaryMessage && c.delay > 0 {
				time.Sleep(c.delay) // a slow reader, not a synchronisation
			}
		}
	}()
	return c
}

// view is what a collector received, decoded: the output after each
// screen (or after connected when no screen came), the control frames.
type view struct {
	segments []segment
	controls []map[string]any
}

// segment is output from a stream offset on, possibly after a screen.
type segment struct {
	screen *termws.Screen
	data   []byte // the serialized screen
	from   int64  // stream offset of out[0]
	out    []byte
}

// end is the stream offset after the last byte received.
func (v view) end() int64 {
	s := v.segments[len(v.segments)-1]
	return s.from + int64(len(s.out))
}

func (c *collector) view(t *testing.T, from int64) view {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	v := view{segments: []segment{{from: from}}}
	for i := 0; i < len(c.frames); i++ {
		f := c.frames[i]
		if f.kind == websocket.BinaryMessage {
			s := &v.segments[len(v.segments)-1]
			s.out = append(s.out, f.data...)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(f.data, &m); err != nil {
			t.Fatalf("text frame %q: %v", f.data, err)
		}
		v.controls = append(v.controls, m)
		if m["type"] == termws.TypeScreen {
			var sf termws.Screen
			_ = json.Unmarshal(f.data, &sf)
			if i+1 == len(c.frames) {
				break // its binary frame is on the way
			}
			i++
			if c.frames[i].kind != websocket.BinaryMessage || len(c.frames[i].data) != sf.Bytes {
				t.Fatalf("screen frame %s not followed by its %d bytes", f.data, sf.Bytes)
			}
			v.segments = append(v.segments, segment{screen: &sf, data: c.frames[i].data, from: sf.Offset})
		}
	}
	return v
}

func (c *collector) count(typ string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.frames {
		if f.kind == websocket.TextMessage && bytes.Contains(f.data, []byte(`"type":"`+typ+`"`)) {
			n++
		}
	}
	return n
}

func (c *collector) received() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, f := range c.frames {
		if f.kind == websocket.BinaryMessage {
			n += int64(len(f.data))
		}
	}
	return n
}

// screenOf is what a terminal of rows×cols shows after out.
func screenOf(rows, cols int, out ...[]byte) *vtscreen.Screen {
	s := vtscreen.New(rows, cols)
	for _, p := range out {
		s.Write(p)
	}
	return s
}

// seqOutput is what `seq 1 n` prints on a terminal (CR LF line ends).
func seqOutput(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// doneAndPrompt tells that out holds the marker "done" and ends with the
// prompt.
func doneAndPrompt(out []byte) bool {
	return bytes.Contains(out, []byte("done\r\n")) && bytes.HasSuffix(bytes.TrimRight(out, " "), []byte(strings.TrimRight(testPrompt, " ")))
}

func flowHost(t *testing.T, ringKB, highKB, lowKB int) *host {
	return startHost(t, withEnv("TERMINAL_SCROLLBACK_KB", strconv.Itoa(ringKB)),
		withEnv("TERMINAL_FLOW_HIGH", strconv.Itoa(highKB)), withEnv("TERMINAL_FLOW_LOW", strconv.Itoa(lowKB)),
		withEnv("TERMINAL_WRITE_TIMEOUT", "60s"), withEnv("TERMINAL_HEARTBEAT", "1m"))
}

// TestFlowSlowClientGetsEveryByte: a flow client that reads slowly sets
// the pace of the shell and receives every byte of a large output, while
// a fast client without flow control is attached too; the ring is much
// smaller than the output.
func TestFlowSlowClientGetsEveryByte(t *testing.T) {
	const lines = 300000 // about 2.3 MB on the terminal, 36 rings
	h := flowHost(t, 64, 64, 16)
	slow := h.dial(session("every", "flow", "1"), nil)
	if !slow.connected.Flow {
		t.Fatalf("connected = %+v, want flow accepted", slow.connected)
	}
	slow.autoAck = true
	slow.ready()
	fast := h.dial(session("every"), nil)
	if fast.connected.Flow {
		t.Fatalf("a client without flow=1 got flow: %+v", fast.connected)
	}
	fc := collect(fast.ws, 0)

	slow.delay = 2 * time.Millisecond
	defer func() {
		if t.Failed() {
			term := h.p.mgr.Get("every")
			t.Logf("clients %+v produced %d emulated %d paused %v slow pos %d", h.p.hub.Clients(), term.Produced(), term.Emulated(), term.Paused(), slow.pos)
		}
	}()
	mark := slow.mark()
	cmd := "seq 1 " + strconv.Itoa(lines) + "; echo do''ne"
	slow.send(cmd + "\r")
	slow.pump(40*time.Second, "the end of the output", func() bool {
		return doneAndPrompt(slow.since(mark))
	})
	out := slow.since(mark)
	// seq's output, from its first line to its last.
	last := []byte("\n" + strconv.Itoa(lines) + "\r\n")
	from, to := bytes.Index(out, []byte("1\r\n2\r\n3\r\n4\r\n")), bytes.LastIndex(out, last)
	if from < 1 || to < 0 || (out[from-1] != '\r' && out[from-1] != '\n') {
		t.Fatalf("seq's first or last line is missing")
	}
	body := out[from : to+len(last)]
	want := seqOutput(lines)
	if got, exp := sha256.Sum256(body), sha256.Sum256(want); got != exp {
		t.Fatalf("the slow flow client got %d bytes of seq's output (sha256 %x), want %d (%x); screens %d, controls %v",
			len(body), got[:8], len(want), exp[:8], len(slow.screens), slow.controls)
	}
	for _, m := range slow.controls {
		if m["type"] == termws.TypeResync || m["type"] == termws.TypeScreen {
			t.Errorf("the slow flow client was resynchronised: %v", m)
		}
	}
	t.Logf("slow flow client: %d bytes, every one; the fast client without flow received %d bytes, %d resync frames",
		len(body), fc.received(), fc.count(termws.TypeResync))
}

// TestNonFlowSlowClientKeepsResync: a slow client without flow=1 never
// holds the shell: while a flow client sets the pace, it falls behind the
// ring and gets resync frames (never a screen), as before flow control.
func TestNonFlowSlowClientKeepsResync(t *testing.T) {
	h := flowHost(t, 64, 64, 16)
	pacer := h.dial(session("old", "flow", "1"), nil)
	pacer.autoAck = true
	pacer.ready()
	old := h.dial(session("old"), nil)
	if tc, ok := old.ws.NetConn().(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(64 << 10) // so that a client that does not read falls behind soon
	}
	// The old client reads nothing while the pacer runs the flood...
	mark := pacer.mark()
	pacer.send("seq 1 1000000; echo do''ne\r")
	pacer.pump(2*time.Minute, "the end of the output", func() bool { return doneAndPrompt(pacer.since(mark)) })
	// ...then reads: it is told what it missed.
	oc := collect(old.ws, 0)
	defer func() {
		if t.Failed() {
			t.Logf("old received %d, clients %+v, produced %d, %d frames, err %v", oc.received(), h.p.hub.Clients(), h.p.mgr.Get("old").Produced(), len(oc.frames), oc.err)
		}
	}()
	waitFor(t, 20*time.Second, "a resync frame for the slow client", func() bool { return oc.count(termws.TypeResync) > 0 })
	if n := oc.count(termws.TypeScreen); n > 0 {
		t.Errorf("a client without flow got %d screen frames", n)
	}
	for _, m := range oc.view(t, old.connected.Offset).controls {
		if m["type"] == termws.TypeResync && m["skipped"].(float64) <= 0 {
			t.Errorf("resync %v without skipped bytes", m)
		}
	}
}

// TestFlowFastSetsPaceSlowGetsScreen: with a fast flow client and a flow
// client that never acknowledges, the fast one sets the pace; the slow
// one, once behind the ring, gets a screen frame whose screen is the
// stream's screen at its offset N, then the output from N with no gap;
// when it acknowledges again it catches up, and both end on the same
// screen.
func TestFlowFastSetsPaceSlowGetsScreen(t *testing.T) {
	const rows, cols = 30, 100
	h := flowHost(t, 1024, 32, 8)
	fast := h.dial(session("pace", "flow", "1"), nil)
	fast.autoAck = true
	fast.send(fmt.Sprintf(`{"type":"resize","rows":%d,"cols":%d}`, rows, cols))
	fast.run("printf '\\033[1;32mgreen\\033[0m \\033]2;pace title\\007\\n'", "green")
	slow := h.dial(session("pace", "flow", "1"), nil)
	if slow.connected.Offset != 0 || slow.connected.ScrollbackTruncated {
		t.Fatalf("slow connected = %+v, want the whole stream replayed", slow.connected)
	}
	sc := collect(slow.ws, 0) // reads everything, acknowledges nothing
	term := h.p.mgr.Get("pace")

	// The fast client reads at a pace the emulator keeps up with, so that
	// the server's screen is exact; the slow one never acknowledges.
	fast.delay = 2 * time.Millisecond
	mark := fast.mark()
	fast.send("for i in $(seq 1 40000); do echo \"line $i of the flood, long enough to wrap on a narrow terminal\"; done; echo do''ne\r")
	fast.pump(3*time.Minute, "the end of the flood", func() bool {
		return doneAndPrompt(fast.since(mark))
	})
	if len(fast.screens) > 0 || fast.outBase != 0 {
		t.Fatalf("the pacing client was resynchronised (%d screens)", len(fast.screens))
	}
	for _, m := range fast.controls {
		if m["type"] == termws.TypeResync {
			t.Fatalf("the pacing client got %v", m)
		}
	}
	if skipped := term.EmulatorSkipped(); skipped > 0 {
		t.Fatalf("the server's emulator skipped %d bytes (the machine is too slow for this pace)", skipped)
	}
	waitFor(t, 30*time.Second, "the slow client's screen frame", func() bool { return sc.count(termws.TypeScreen) > 0 })
	// An ack the client sent before it saw the screen (an offset before
	// the screen's) is still valid: it must not be refused.
	first := sc.view(t, 0).segments[0]
	slow.ack(first.from + int64(len(first.out)))

	// Now the slow client acknowledges what it has, until it has it all.
	end := term.Produced()
	var v view
	acked := int64(-1)
	waitFor(t, time.Minute, "the slow client to catch up", func() bool {
		v = sc.view(t, 0)
		if pos := v.end(); pos != acked {
			slow.ack(pos)
			acked = pos
		}
		return v.end() == end
	})
	if len(v.segments) < 2 {
		t.Fatal("no screen frame for the slow client")
	}
	for _, m := range v.controls {
		if m["type"] == termws.TypeError {
			t.Errorf("the slow client got %v", m)
		}
	}
	whole := fast.out
	for i, s := range v.segments {
		if s.screen != nil {
			if s.screen.Rows != rows || s.screen.Cols != cols {
				t.Errorf("screen %d is %dx%d, want %dx%d", i, s.screen.Rows, s.screen.Cols, rows, cols)
			}
			// The screen is the stream's screen at its offset.
			got := screenOf(s.screen.Rows, s.screen.Cols, s.data)
			want := screenOf(rows, cols, whole[:s.from])
			if d := vtscreen.Diff(want, got); d != "" {
				t.Fatalf("screen %d at offset %d is not the stream's screen there: %s", i, s.from, d)
			}
		}
		// The output after it is the stream from its offset, no gap.
		if !bytes.Equal(s.out, whole[s.from:s.from+int64(len(s.out))]) {
			t.Fatalf("segment %d: the output from %d is not the stream's", i, s.from)
		}
	}
	last := v.segments[len(v.segments)-1]
	final := screenOf(last.screen.Rows, last.screen.Cols, last.data, last.out)
	if d := vtscreen.Diff(screenOf(rows, cols, whole), final); d != "" {
		t.Fatalf("the slow client's final screen differs from the fast client's: %s", d)
	}
	if !strings.Contains(final.Emulator().String(), "line 40000 of the flood") {
		t.Errorf("the final screen lacks the last line:\n%s", final.Emulator().String())
	}
	t.Logf("stream of %d bytes; the slow client got %d screens and %d bytes of output",
		len(whole), len(v.segments)-1, sc.received())
}

// TestDetachedFlowClientReleasesTheShell: a flow client that does not
// acknowledge holds the shell (flow control pauses the PTY); when it goes
// away, the shell runs on at once.
func TestDetachedFlowClientReleasesTheShell(t *testing.T) {
	h := flowHost(t, 1024, 64, 16)
	holder := h.dial(session("held", "flow", "1"), nil)
	driver := h.dial(session("held"), nil)
	driver.keep = 64 << 10
	driver.ready()
	term := h.p.mgr.Get("held")
	driver.send("seq 1 3000000; echo do''ne\r")
	waitFor(t, 30*time.Second, "flow control to pause the shell", term.Paused)
	held := term.Produced()
	if ahead := held - holder.connected.Offset; ahead > 64<<10+64<<10 {
		t.Errorf("paused %d bytes ahead of the holder's ack, want about the high watermark", ahead)
	}
	holder.close()
	waitFor(t, 5*time.Second, "the shell to be released", func() bool { return !term.Paused() })
	driver.pump(2*time.Minute, "the end of the output", func() bool {
		return doneAndPrompt(driver.out)
	})
	if term.Produced() < 20<<20 {
		t.Errorf("only %d bytes produced", term.Produced())
	}
}

// TestBadAcks: an ack beyond what was sent, one going backwards, a
// malformed one, or one on a connection without flow=1 is answered with
// bad_request and changes nothing (and is not typed into the shell).
func TestBadAcks(t *testing.T) {
	h := flowHost(t, 1024, 64, 16)
	c := h.dial(session("acks", "flow", "1"), nil)
	c.ready()
	acked := func() int64 {
		for _, s := range h.p.hub.Clients() {
			if s.Remote == c.ws.LocalAddr().String() {
				return s.Acked
			}
		}
		t.Fatal("client not found")
		return 0
	}
	badRequest := func(c *client, msg string) {
		t.Helper()
		n := len(c.controls)
		c.send(msg)
		c.pump(10*time.Second, "the error for "+msg, func() bool {
			for _, m := range c.controls[n:] {
				if m["type"] == termws.TypeError {
					if m["code"] != termws.CodeBadRequest || !strings.Contains(m["message"].(string), "nothing changed") {
						t.Errorf("%s: error %v, want bad_request", msg, m)
					}
					return true
				}
			}
			return false
		})
	}
	quiet := func(c *client) { // a pong with no error before it
		t.Helper()
		n := len(c.controls)
		c.send(`{"type":"ping"}`)
		m := c.waitControlAfter(n, termws.TypePong)
		for _, e := range c.controls[n:] {
			if e["type"] == termws.TypeError {
				t.Errorf("unexpected %v before %v", e, m)
			}
		}
	}
	pos := c.pos
	badRequest(c, `{"type":"ack","offset":`+strconv.FormatInt(pos+1, 10)+`}`)
	if a := acked(); a != 0 {
		t.Errorf("acked %d after an ack beyond the output, want 0", a)
	}
	c.ack(pos)
	quiet(c)
	if a := acked(); a != pos {
		t.Errorf("acked %d, want %d", a, pos)
	}
	badRequest(c, `{"type":"ack","offset":`+strconv.FormatInt(pos-1, 10)+`}`)
	for _, msg := range []string{`{"type":"ack"}`, `{"type":"ack","offset":-1}`, `{"type":"ack","offset":"5"}`, `{"type":"ack","offset":1.5}`} {
		badRequest(c, msg)
	}
	if a := acked(); a != pos {
		t.Errorf("acked %d after bad acks, want %d", a, pos)
	}

	plain := h.dial(session("acks"), nil)
	badRequest(plain, `{"type":"ack","offset":0}`)
	out := plain.run("echo af''ter", "after")
	if strings.Contains(out, "ack") || strings.Contains(string(plain.out), `"type"`) {
		t.Errorf("the ack was typed into the shell: %q", plain.out)
	}
}

// waitControlAfter reads until a control frame of type typ arrives after
// the first n.
func (c *client) waitControlAfter(n int, typ string) map[string]any {
	c.t.Helper()
	var got map[string]any
	c.pump(10*time.Second, typ+" frame", func() bool {
		for _, m := range c.controls[n:] {
			if m["type"] == typ {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// TestFlowReattachAfterTheRingGetsScreen: a flow client that comes back
// with an offset the ring no longer holds, or a new flow client when the
// ring has wrapped, gets the screen at N (the connected frame's offset)
// and then the output from N, instead of a truncated replay.
func TestFlowReattachAfterTheRingGetsScreen(t *testing.T) {
	h := flowHost(t, 16, 16, 4)
	a := h.dial(session("back", "flow", "1"), nil)
	a.autoAck = true
	a.ready()
	a.close()
	b := h.dial(session("back", "flow", "1"), nil)
	b.autoAck = true
	b.run("seq 1 30000; echo do''ne", "done")
	term := h.p.mgr.Get("back")
	waitFor(t, 30*time.Second, "the server's screen to catch up", func() bool { return term.Emulated() == term.Produced() })

	check := func(name string, c *client) {
		t.Helper()
		got := c.connected
		if !got.Flow || !got.ScrollbackTruncated || !got.HasScrollback || got.Offset != term.Produced() {
			t.Fatalf("%s: connected = %+v, want flow, truncated, offset %d", name, got, term.Produced())
		}
		if len(c.screens) != 1 || c.screens[0].Offset != got.Offset || c.screens[0].mark != 0 {
			t.Fatalf("%s: screens %+v, want one at %d before any output", name, c.screens, got.Offset)
		}
		s := c.screens[0]
		if d := vtscreen.Diff(screenOf(24, 80, b.out[:s.Offset]), screenOf(s.Rows, s.Cols, s.data)); d != "" {
			t.Fatalf("%s: the screen is not the stream's at %d: %s", name, s.Offset, d)
		}
		c.autoAck = true
		c.run("echo li''ve-"+name, "live-"+name)
		b.waitOutput(0, "live-"+name)
		b.pump(10*time.Second, "the prompt", func() bool { return bytes.HasSuffix(b.out, []byte(testPrompt)) })
		if !bytes.Equal(c.out, b.out[s.Offset:]) {
			t.Fatalf("%s: output after the screen differs from the stream from %d", name, s.Offset)
		}
		if d := vtscreen.Diff(screenOf(24, 80, b.out), screenOf(s.Rows, s.Cols, s.data, c.out)); d != "" {
			t.Fatalf("%s: final screens differ: %s", name, d)
		}
	}
	a2 := h.dial(session("back", "stream", a.connected.Stream, "offset", strconv.FormatInt(a.pos, 10), "flow", "1"), nil)
	check("reattached", a2)
	fresh := h.dial(session("back", "flow", "1"), nil)
	check("fresh", fresh)

	// Without flow=1 the replay is truncated, as before.
	plain := h.dial(session("back", "stream", a.connected.Stream, "offset", strconv.FormatInt(a.pos, 10)), nil)
	if !plain.connected.ScrollbackTruncated || plain.connected.Flow || len(plain.screens) > 0 {
		t.Errorf("without flow: connected %+v, %d screens", plain.connected, len(plain.screens))
	}
}

// TestFlowParameterIsChecked: flow accepts 1 or 0 only.
func TestFlowParameterIsChecked(t *testing.T) {
	h := startHost(t)
	_, r, err := h.tryDial(session("param", "flow", "yes"), nil)
	if err == nil || r.status != 400 || r.body["error"] != "bad_request" {
		t.Fatalf("flow=yes: %v %+v, want 400 bad_request", err, r)
	}
	if c := h.dial(session("param", "flow", "0"), nil); c.connected.Flow {
		t.Errorf("flow=0 accepted as flow")
	}
}
