package app

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// TestChatConnectCyclesNoLeak: many sockets connecting (with a replay),
// exchanging a frame and going away, cleanly or abruptly, leave no
// goroutine behind on either of two instances.
func TestChatConnectCyclesNoLeak(t *testing.T) {
	a, b := startPair(t)
	w, conn := a.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	w.until("result", isResult)
	cycle := func(c *chat, i int) {
		ws, _ := c.join(id, 0) // replays the log
		ws.until("result", isResult)
		ws.send(map[string]any{"type": "ping"})
		ws.until("pong", isType("pong"))
		if i%2 == 0 {
			_ = ws.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		_ = ws.ws.Close()
	}
	for i := range 10 { // warm up pools
		cycle(a, i)
		cycle(b, i)
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("count fds: %v", err)
		}
		return len(ents)
	}
	goroutines, files := runtime.NumGoroutine(), fds()
	for i := range 200 {
		cycle(a, i)
		cycle(b, i)
	}
	// The server side of a socket ends shortly after the client's close.
	g, f := runtime.NumGoroutine(), fds()
	for deadline := time.Now().Add(5 * time.Second); (g > goroutines+5 || f > files+5) && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		g, f = runtime.NumGoroutine(), fds()
	}
	if g > goroutines+5 || f > files+5 {
		buf := make([]byte, 1<<20)
		t.Fatalf("before 400 connections: %d goroutines, %d fds; after: %d, %d\n%s", goroutines, files, g, f, buf[:runtime.Stack(buf, true)])
	}
}
