package app

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

// TestFloodGoesOutInLargeFrames: a flood of output reaches a flow client
// that reads and acknowledges at full speed in frames much larger than a
// PTY read (4 KiB at most), every byte of it: the writer gathers output
// while a flood lasts, as the browser pays per message.
func TestFloodGoesOutInLargeFrames(t *testing.T) {
	const lines = 300000 // about 2.3 MB
	h := flowHost(t, 4096, 512, 128)
	c := h.dial(session("batch", "flow", "1"), nil)
	c.autoAck = true
	c.ready()
	mark, pos, frames := c.mark(), c.pos, c.outFrames
	c.send("seq 1 " + strconv.Itoa(lines) + "; echo do''ne\r")
	c.pump(60*time.Second, "the end of the output", func() bool { return doneAndPrompt(c.since(mark)) })
	got := c.since(mark)
	if want := seqOutput(lines); !bytes.Contains(got, want) {
		t.Fatalf("seq's output is not all there (%d bytes received, want %d of seq's)", len(got), len(want))
	}
	n, size := c.outFrames-frames, c.pos-pos
	avg := size / int64(max(n, 1))
	t.Logf("%d bytes in %d output frames: %d bytes a frame on average (MaxFrame %d)", size, n, avg, termws.MaxFrame)
	// Without gathering, one frame per PTY read: at most 4 KiB each.
	if avg < 8<<10 {
		t.Errorf("output frames average %d bytes during a flood; want well above a PTY read (4 KiB)", avg)
	}
}
