package room

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
)

const relayTestSecret = "test-internal-secret-0123456789"

func TestRelaySealOpen(t *testing.T) {
	a := newRelayAuth(internalauth.FromString(relayTestSecret), slog.New(slog.DiscardHandler))
	other := newRelayAuth(internalauth.FromString("another-secret-0123456789"), slog.New(slog.DiscardHandler))
	body := []byte(`{"from":"x","cmd":{"type":"stop"}}`)
	msg := a.seal(body, "svc:chat:cmd:s1")
	if got, ok := a.open(msg, "svc:chat:cmd:s1"); !ok || string(got) != string(body) {
		t.Fatalf("open(seal) = %q, %v", got, ok)
	}
	tampered := append([]byte{}, msg...)
	tampered[len(tampered)-3] ^= 1
	cases := []struct {
		name  string
		msg   []byte
		where []string
		by    *relayAuth
	}{
		{"another channel", msg, []string{"svc:chat:cmd:s2"}, a},
		{"another prefix", msg, []string{"other:chat:cmd:s1"}, a},
		{"another secret", msg, []string{"svc:chat:cmd:s1"}, other},
		{"body altered", tampered, []string{"svc:chat:cmd:s1"}, a},
		{"unsealed", body, []string{"svc:chat:cmd:s1"}, a},
		{"short", []byte("00"), []string{"svc:chat:cmd:s1"}, a},
		{"fields run together", a.seal(body, "ab", "c"), []string{"a", "bc"}, a},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.by.open(tc.msg, tc.where...); ok {
				t.Error("verified")
			}
		})
	}
}

func TestRelayFresh(t *testing.T) {
	a := newRelayAuth(internalauth.FromString(relayTestSecret), slog.New(slog.DiscardHandler))
	now := time.Now()
	a.now = func() time.Time { return now }
	at := now.UnixMilli()
	if !a.fresh("cmd", "x", 1000, at) {
		t.Fatal("first message refused")
	}
	if a.fresh("cmd", "x", 1000, at) {
		t.Error("replayed message accepted")
	}
	if !a.fresh("frames", "x", 1000, at) || !a.fresh("cmd", "y", 1000, at) {
		t.Error("the same number of another kind or sender refused")
	}
	if !a.fresh("cmd", "x", 999, at) || a.fresh("cmd", "x", 999, at) {
		t.Error("a late message (in the window) is not accepted exactly once")
	}
	if !a.fresh("cmd", "x", 1000+windowWords*64*3, at) {
		t.Error("a jump ahead refused")
	}
	if a.fresh("cmd", "x", 1001, at) {
		t.Error("a number older than the window accepted")
	}
	if a.fresh("cmd", "z", 1, now.Add(-relayMaxAge-time.Second).UnixMilli()) {
		t.Error("a message older than relayMaxAge accepted")
	}
	if a.fresh("cmd", "z", 2, now.Add(relayMaxAge+time.Second).UnixMilli()) {
		t.Error("a message from too far ahead accepted")
	}
	if a.fresh("cmd", "z", 0, at) {
		t.Error("number 0 accepted")
	}
}

// TestReplayWindowRing: each number in the window is accepted once, in
// any order, across the ring's wrap; numbers below the window never.
func TestReplayWindowRing(t *testing.T) {
	var w replayWindow
	const span = windowWords * 64
	steps := []struct {
		seq  uint64
		want bool
	}{
		{100, true},
		{100, false},
		{99, true},
		{163, true},
		{164, true},
		{100 + 10*64, true},
		{100, false},
		{101, true},
		{101, false},
		// Past the wrap: the ring's words for the new blocks are clear.
		{100 + span, true},
		{101 + span, true},
		{101 + span, false},
		{101, false},
		{100 + 10*64, false},
		{101 + 10*64, true},
		{100 + 3*span, true},
		{100 + 2*span, false},
		{100 + 3*span - span + 64, true},
	}
	for i, st := range steps {
		if got := w.accept(st.seq); got != st.want {
			t.Fatalf("step %d: accept(%d) = %v, want %v (top %d)", i, st.seq, got, st.want, w.top)
		}
	}
}

// BenchmarkRelayFrame is the relay's cost per frame, as an instance
// publishes and another receives it: before (JSON only) and after (JSON
// and the seal, checked, and the replay window).
func BenchmarkRelayFrame(b *testing.B) {
	data := json.RawMessage(`{"type":"agent_message","line":1234,"data":{"type":"assistant","message":{"content":[{"type":"text","text":"` +
		string(make([]byte, 0)) + `Here is a reasonably sized chunk of agent output, about the length of a streamed text delta or a short message line."}]}}}`)
	ch := "svc:chat:frames:6PDXWHBLFVP6WC2MTKS3NKOEJS"
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			msg, _ := json.Marshal(wireFrame{From: "abcdefabcdef", Line: int64(i), Data: data})
			var w wireFrame
			if json.Unmarshal(msg, &w) != nil {
				b.Fatal("decode")
			}
		}
	})
	b.Run("sealed", func(b *testing.B) {
		send := newRelayAuth(internalauth.FromString(relayTestSecret), slog.New(slog.DiscardHandler))
		recv := newRelayAuth(internalauth.FromString(relayTestSecret), slog.New(slog.DiscardHandler))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			seq, at := send.next()
			msg, _ := json.Marshal(wireFrame{From: "abcdefabcdef", Seq: seq, At: at, Line: int64(i), Data: data})
			msg = send.seal(msg, ch)
			body, ok := recv.open(msg, ch)
			var w wireFrame
			if !ok || json.Unmarshal(body, &w) != nil || !recv.fresh("frames", w.From, w.Seq, w.At) {
				b.Fatal("open")
			}
		}
	})
}
