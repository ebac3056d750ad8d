package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// The floor's assistant frames take the client's fast path, as chat's do,
// so that both runs cost the client the same.
func TestFloorFramesParse(t *testing.T) {
	at := time.Date(2026, 11, 22, 8, 30, 1, 234e6, time.UTC)
	raw := assistantFrame("floor-0001", 17, 2, " chunk 3", at)
	got, ok := assistantStamp(raw)
	if !ok || !got.Equal(at) {
		t.Fatalf("assistantStamp = %v %v, want %v (frame %s)", got, ok, at, raw)
	}
	if k, _, err := decodeFrame(raw); err != nil || k != kindAssistant {
		t.Fatalf("decodeFrame: %v %v", k, err)
	}
	if n := frameLine(raw); n != 17 {
		t.Errorf("frameLine = %d, want 17", n)
	}
	if k, _, err := parseFrame(resultFrame("floor-0001", 18, "x")); err != nil || k != kindResult {
		t.Errorf("result frame: kind %v, %v", k, err)
	}
}

// A floor turn sends what chat sends, in chat's order and with its lines:
// message_stored to every socket of the session (and user_message_stored
// to the sender), system/init with the first message, the others, the
// result; another session's sockets get nothing.
func TestFloorTurn(t *testing.T) {
	srv := httptest.NewServer(floorHandler(5*time.Millisecond, 2))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/chat?group="
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	var socks []*sock
	for _, g := range []string{"0", "0", "1"} {
		s, err := dialOne(ctx, &d, nil, url+g)
		if err != nil {
			t.Fatal(err)
		}
		defer s.conn.Close()
		socks = append(socks, s)
	}
	c, resp, err := d.DialContext(ctx, url+"2", nil)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err == nil {
		_ = c.Close()
		t.Error("a group past the sessions was accepted")
	}
	rd, err := newReader(socks, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.stop()
	dones := []<-chan struct{}{socks[0].arm(true, 3), socks[1].arm(true, 3), socks[2].arm(true, 1)}
	if err := socks[0].prompt("SLOW 3"); err != nil {
		t.Fatal(err)
	}
	for i, s := range socks[:2] {
		select {
		case <-dones[i]:
		case <-ctx.Done():
			t.Fatalf("socket %d: no result", i)
		}
		s.mu.Lock()
		frames, lat, last, gaps, repeated, got := s.frames, len(s.lat), s.lastLine, s.skipped, s.repeated, s.gotResult
		s.mu.Unlock()
		want := int64(6) // stored, init, 3 assistant, result
		if i == 0 {
			want++ // user_message_stored
		}
		if frames != want || lat != 3 || last != 6 || gaps != 0 || repeated != 0 || !got {
			t.Errorf("socket %d: %d frames (want %d), %d timed (want 3), last line %d (want 6), gaps %d, repeated %d, result %t", i, frames, want, lat, last, gaps, repeated, got)
		}
	}
	// The other session's socket got nothing of it: counted since before
	// that turn, it has exactly its own session's turn, lines from 1.
	if err := socks[2].prompt("SLOW 1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dones[2]:
	case <-ctx.Done():
		t.Fatal("the other session: no result")
	}
	s := socks[2]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frames != 5 || len(s.lat) != 1 || s.lastLine != 4 || s.skipped != 0 || s.repeated != 0 {
		t.Errorf("the other session's socket: %d frames (want 5: stored, ack, init, assistant, result), %d timed, last line %d (want 4), gaps %d, repeated %d",
			s.frames, len(s.lat), s.lastLine, s.skipped, s.repeated)
	}
}
