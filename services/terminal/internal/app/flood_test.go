package app

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

// perClientBound is the most the server may hold for one client outside
// the scrollback ring.
const perClientBound = 1 << 20

// TestFloodWithStalledReader: `yes` floods the terminal while one client
// reads and another has stopped reading. The shell is never held up (the
// ring takes every byte), the server holds at most one frame for the
// stalled client however far behind it falls, the reading client stays
// consistent (told of any gap with resync), Ctrl-C stops the flood at
// once, and the stalled client is dropped after the write timeout.
func TestFloodWithStalledReader(t *testing.T) {
	const ringKB = 64
	h := startHost(t, withEnv("TERMINAL_SCROLLBACK_KB", strconv.Itoa(ringKB)), withEnv("TERMINAL_WRITE_TIMEOUT", "3s"))
	a := h.dial(session("flood"), nil)
	a.keep = 64 << 10
	a.ready()
	stalled := h.dial(session("flood"), nil) // reads its connected frame, then nothing
	stalledAddr := stalled.ws.LocalAddr().String()
	term := h.p.mgr.Get("flood")
	start := term.Produced()

	// Over both clients: the most held outside the ring, the most pending
	// in it; for the stalled one, how much it missed.
	var maxHeld, maxPending, maxMissed int64
	observe := func() {
		for _, s := range h.p.hub.Clients() {
			maxHeld = max(maxHeld, s.MaxHeld)
			maxPending = max(maxPending, s.Pending)
			if s.Remote == stalledAddr {
				maxMissed = max(maxMissed, s.Missed)
			}
		}
	}
	a.send("yes\r")
	// Until the stalled client has fallen far behind: its socket buffers
	// are full, and it has missed many rings' worth of output.
	const behind = 8 * ringKB << 10
	a.pump(60*time.Second, "the stalled client to miss 8 rings of output", func() bool {
		observe()
		return maxMissed > behind && term.Produced()-start > 8<<20
	})
	observe()
	if maxHeld > perClientBound || maxHeld > termws.MaxFrame+4<<10 {
		t.Errorf("the server held up to %d bytes for one client, want at most one frame (%d)", maxHeld, termws.MaxFrame)
	}
	if maxPending > ringKB<<10 {
		t.Errorf("up to %d bytes pending for one client, more than the ring (%d)", maxPending, ringKB<<10)
	}

	// Ctrl-C reaches the shell at once, flood or not.
	mark := a.mark()
	sent := time.Now()
	a.send("\x03")
	a.waitOutput(mark, "^C")
	a.pump(10*time.Second, "the prompt after Ctrl-C", func() bool {
		return strings.HasSuffix(strings.TrimRight(string(a.since(mark)), " "), strings.TrimRight(testPrompt, " "))
	})
	t.Logf("Ctrl-C to prompt: %v; produced %d MiB; the stalled client missed %d KiB; at most %d KiB held and %d KiB pending for a client",
		time.Since(sent), term.Produced()>>20, maxMissed>>10, maxHeld>>10, maxPending>>10)
	a.run("echo af''ter", "after")
	resyncs := 0
	for _, m := range a.controls {
		if m["type"] == termws.TypeResync {
			resyncs++
			if m["skipped"].(float64) <= 0 {
				t.Errorf("resync frame %v without skipped bytes", m)
			}
		}
	}
	t.Logf("the reading client was resynchronised %d times", resyncs)

	// The stalled client is dropped once a write has waited the timeout.
	waitFor(t, 15*time.Second, "the stalled client to be dropped", func() bool { return h.p.hub.Len() == 1 })
}

func TestCtrlCStopsFlood(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("ctrlc"), nil)
	c.keep = 64 << 10
	c.ready()
	mark := c.mark()
	c.send("yes flood-line\r")
	c.pump(10*time.Second, "1 MiB of flood", func() bool { return c.mark()-mark > 1<<20 })
	mark = c.mark()
	c.send("\x03")
	c.pump(10*time.Second, "the prompt after Ctrl-C", func() bool {
		return strings.HasSuffix(strings.TrimRight(string(c.since(mark)), " "), strings.TrimRight(testPrompt, " "))
	})
	c.run("echo st''opped", "stopped")
}

func countFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func listFDs() string {
	entries, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range entries {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"->"+l)
	}
	return strings.Join(out, " ")
}

// TestNoLeakOverConnectCycles: 1000 connect/disconnect cycles, and 50
// terminals started and deleted, leave no goroutine and no descriptor
// behind (goleak checks the rest at the end of the package).
func TestNoLeakOverConnectCycles(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("cycle"), nil)
	c.run("echo re''ady", "ready")
	c.close()
	waitFor(t, 5*time.Second, "the first client to go", func() bool { return h.p.hub.Len() == 0 })
	fds, goroutines := countFDs(t), goleak.IgnoreCurrent()

	start := time.Now()
	for i := range 1000 {
		c := h.dial(session("cycle"), nil)
		if i%100 == 99 {
			c.run("echo cy''cle", "cycle")
		}
		c.close()
	}
	cycles := time.Since(start)
	start = time.Now()
	for i := range 50 {
		id := "made-" + strconv.Itoa(i)
		c := h.dial(session(id), nil)
		if status, body := h.request("DELETE", "/api/terminal/"+id, "", ""); status != 200 {
			t.Fatalf("DELETE %s: %d %v", id, status, body)
		}
		c.waitClosed()
	}
	created := time.Since(start)
	waitFor(t, 10*time.Second, "every connection to end", func() bool { return h.p.hub.Len() == 0 && h.p.mgr.Len() == 1 })
	defer func() {
		if t.Failed() {
			t.Log(listFDs())
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
		}
	}()
	waitFor(t, 10*time.Second, "descriptors back to "+strconv.Itoa(fds), func() bool { return countFDs(t) <= fds })
	// Idle fasthttp workers linger up to 10 s after a burst; they are the
	// server's pool, not connections.
	if err := goleak.Find(goroutines, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).workerFunc")); err != nil {
		t.Errorf("goroutines left over: %v", err)
	}
	t.Logf("1000 connect/disconnect cycles: %v; 50 terminals started and deleted: %v; %d descriptors, %d goroutines",
		cycles, created, countFDs(t), runtime.NumGoroutine())
}
