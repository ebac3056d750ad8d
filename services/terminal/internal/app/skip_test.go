package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

// emuState is what a client with keep lines of scrollback shows.
func emuState(e *vt.Emulator) string {
	var b strings.Builder
	for _, l := range e.Scrollback().Lines() {
		b.WriteString(l.Render())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "--screen--\n%s\n--cursor %v--", e.Render(), e.CursorPosition())
	return b.String()
}

// TestFlowSkipClientEndsOnTheSameScreenAndScrollback: a slow flow client
// that keeps 500 lines of scrollback (skip_lines=500) and alone sets the
// pace of a long coloured flood, with a stretch that is not plain in its
// middle, is left out most of the flood and ends with the same scrollback,
// screen and cursor as a client that read every byte. Its screen is taller
// than the terminal (another client resized it after): the skips must push
// out its 200 rows, not the terminal's 24.
func TestFlowSkipClientEndsOnTheSameScreenAndScrollback(t *testing.T) {
	const rows, cols, keep = 200, 80, 500
	h := flowHost(t, 4096, 2048, 512)
	c := h.dial(session("skip", "flow", "1", "skip_lines", "500"), nil)
	if !c.connected.Flow {
		t.Fatalf("connected = %+v, want flow", c.connected)
	}
	c.send(fmt.Sprintf(`{"type":"resize","rows":%d,"cols":%d}`, rows, cols))
	c.run("echo rea''dy", "ready")
	// The observer reads every byte, never acknowledges, never paces.
	ows, resp, err := (&websocket.Dialer{}).Dial("ws://"+h.addr+"/ws/terminal?session=skip", map[string][]string{protocol.HeaderInternal: {testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	defer ows.Close()
	if err := ows.WriteMessage(websocket.TextMessage, []byte(`{"type":"resize","rows":24,"cols":80}`)); err != nil {
		t.Fatal(err)
	}
	obs := collect(ows, 0)
	waitFor(t, 10*time.Second, "the observer's resize", func() bool { return h.p.mgr.Get("skip").Info().Rows == 24 })

	// What the client is given, fed to its emulator at the end (so that
	// it costs the machine nothing while the shell runs).
	got := [][]byte{c.out}
	pos := c.pos
	c.send(`awk 'BEGIN { for (i = 1; i <= 60000; i++) printf "\033[3%dmline %d of the flood\033[0m and plain text after it\n", i % 8, i }'; ` +
		`printf '\033[2;5Hxx\033[24;1H\n'; awk 'BEGIN { for (i = 1; i <= 40000; i++) print "second " i }'; echo do''ne` + "\r")
	skips, skipped, received := 0, int64(0), int64(0)
	deadline := time.Now().Add(3 * time.Minute)
	var tail []byte
	for !strings.Contains(string(tail), "done\r\n") || !strings.HasSuffix(strings.TrimRight(string(tail), " "), strings.TrimRight(testPrompt, " ")) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; %d skips, tail %q", skips, tail)
		}
		kind, msg := c.next(time.Until(deadline))
		switch kind {
		case websocket.BinaryMessage:
			got = append(got, msg)
			pos += int64(len(msg))
			received += int64(len(msg))
			tail = append(tail, msg...)
			if len(tail) > 4096 {
				tail = tail[len(tail)-4096:]
			}
			time.Sleep(time.Duration(len(msg)) * 2 * time.Microsecond) // a slow reader, 0.5 MB/s: not a synchronisation
		case websocket.TextMessage:
			var f termws.Skip
			if err := json.Unmarshal(msg, &f); err != nil || f.Type != termws.TypeSkip {
				continue // heartbeats
			}
			if f.From != pos || f.Offset <= f.From {
				t.Fatalf("skip %+v at stream offset %d", f, pos)
			}
			got = append(got, []byte(f.SGR))
			skips++
			skipped += f.Offset - f.From
			pos = f.Offset
		default:
			t.Fatalf("connection ended: %s", msg)
		}
		c.ack(pos)
	}
	total := h.p.mgr.Get("skip").Produced()
	waitFor(t, 30*time.Second, "the observer to read everything", func() bool { return obs.received() >= total })
	full := obs.view(t, 0)
	if len(full.segments) != 1 || full.segments[0].from != 0 {
		t.Fatalf("the observer missed output (%d segments)", len(full.segments))
	}
	emu := vt.NewEmulator(cols, rows)
	emu.SetScrollbackSize(keep)
	for _, p := range got {
		_, _ = emu.Write(p)
	}
	want := vt.NewEmulator(cols, rows)
	want.SetScrollbackSize(keep)
	_, _ = want.Write(full.segments[0].out)
	if got, w := emuState(emu), emuState(want); got != w {
		t.Fatalf("the skipping client differs from the stream:\n got %q\nwant %q", got[max(len(got)-3000, 0):], w[max(len(w)-3000, 0):])
	}
	if pos != total {
		t.Errorf("the client is at %d, the stream at %d", pos, total)
	}
	if skips == 0 || skipped < total/2 {
		t.Fatalf("%d skips of %d bytes in a stream of %d: the flood was not left out", skips, skipped, total)
	}
	if !strings.Contains(emu.String(), "second 40000") {
		t.Errorf("the screen lacks the last line:\n%s", emu.String())
	}
	st := h.p.hub.Clients()
	t.Logf("stream %d bytes: %d skips left out %d bytes, %d bytes sent; hub: %+v", total, skips, skipped, received, st)
}

func TestSkipLinesParameterIsChecked(t *testing.T) {
	h := startHost(t)
	for _, q := range [][]string{{"flow", "1", "skip_lines", "x"}, {"flow", "1", "skip_lines", "-1"}, {"flow", "1", "skip_lines", "1000001"}, {"skip_lines", "500"}, {"flow", "0", "skip_lines", "500"}} {
		_, r, err := h.tryDial(session("param", q...), nil)
		if err == nil || r.status != 400 || r.body["error"] != "bad_request" {
			t.Errorf("%v: %v %+v, want 400 bad_request", q, err, r)
		}
	}
	if c := h.dial(session("param", "flow", "1", "skip_lines", "0"), nil); !c.connected.Flow {
		t.Errorf("skip_lines=0 with flow=1 refused flow")
	}
}

// TestFlowEveryByteClientPacesBesideASkippingOne: a flow client that wants
// every byte sets the pace even though a skipping client beside it is
// always ahead (it is left the flood out): the first gets every byte, no
// screen, while the second is left the flood out.
func TestFlowEveryByteClientPacesBesideASkippingOne(t *testing.T) {
	h := flowHost(t, 256, 64, 16)
	every := h.dial(session("mixed", "flow", "1"), nil)
	every.send(`{"type":"resize","rows":24,"cols":80}`)
	every.run("echo rea''dy", "ready")
	skipping := h.dial(session("mixed", "flow", "1", "skip_lines", "100"), nil)
	sc := collect(skipping.ws, 0)
	every.autoAck = true
	every.delay = time.Millisecond // per 4 KiB: a slow reader, not a synchronisation
	mark := every.mark()
	every.send(`awk 'BEGIN { for (i = 1; i <= 100000; i++) print "line " i " of a flood that wants every byte" }'; echo do''ne` + "\r")
	every.pump(3*time.Minute, "the end of the flood", func() bool { return doneAndPrompt(every.since(mark)) })
	if len(every.screens) > 0 {
		t.Fatalf("the client that wants every byte got %d screens", len(every.screens))
	}
	for _, m := range every.controls {
		if m["type"] == termws.TypeResync || m["type"] == termws.TypeSkip {
			t.Fatalf("the client that wants every byte got %v", m)
		}
	}
	if got := int64(every.outBase+len(every.out)) + every.connected.Offset; got != h.p.mgr.Get("mixed").Produced() {
		t.Fatalf("it got %d bytes of %d", got, h.p.mgr.Get("mixed").Produced())
	}
	if sc.count(termws.TypeSkip) == 0 {
		t.Errorf("the skipping client was not left anything out")
	}
}
