package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		kind kind
		at   time.Time
		err  bool
	}{
		{
			"assistant", `{"type":"agent_message","line":7,"data":{"type":"assistant","message":{"content":[{"type":"text","text":" chunk 2"}]},"timestamp":"2025-06-01T10:00:00.123Z"}}`,
			kindAssistant, time.Date(2025, 6, 1, 10, 0, 0, 123e6, time.UTC), false,
		},
		{"result", `{"type":"agent_message","line":9,"data":{"type":"result","subtype":"success"}}`, kindResult, time.Time{}, false},
		{"system", `{"type":"agent_message","line":3,"data":{"type":"system","subtype":"init"}}`, kindOther, time.Time{}, false},
		{"stored", `{"type":"message_stored","line":2,"message":{"role":"user","content":"SLOW 3"}}`, kindOther, time.Time{}, false},
		{"bad timestamp", `{"type":"agent_message","data":{"type":"assistant","timestamp":"yesterday"}}`, kindAssistant, time.Time{}, true},
		{"not JSON", `{"type":`, kindOther, time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, at, err := parseFrame([]byte(tt.raw))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if k != tt.kind || !at.Equal(tt.at) {
				t.Errorf("got %v %v, want %v %v", k, at, tt.kind, tt.at)
			}
		})
	}
}

// The frames of the load, encoded as chat encodes them (a map, keys in
// order, the agent's line as is), are recognised without decoding and
// classified as decoding them does; others fall back to decoding.
func TestParseFrameMarkers(t *testing.T) {
	chatFrame := func(line int, data string) []byte {
		// As chat encodes it: libs/protocol's type, its field order.
		b, err := json.Marshal(protocol.AgentMessageFrame{Type: protocol.FrameAgentMessage, Data: json.RawMessage(data), Line: int64(line)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	frames := map[string][]byte{
		"assistant":                           chatFrame(5, `{"type":"assistant","message":{"type":"message","content":[{"type":"text","text":" chunk 2"}],"id":"msg_0001","model":"claude-sonnet-4-5","role":"assistant"},"parent_tool_use_id":null,"request_id":"req_0001","session_id":"s","timestamp":"2025-06-01T10:00:00.123Z","uuid":"u"}`),
		"result":                              chatFrame(9, `{"duration_ms":10,"is_error":false,"result":"This chunk 2","session_id":"s","subtype":"success","total_cost_usd":0.1,"type":"result","uuid":"u"}`),
		"init":                                chatFrame(3, `{"model":"claude-sonnet-4-5","session_id":"s","subtype":"init","type":"system"}`),
		"user":                                chatFrame(4, `{"message":{"content":[{"type":"tool_result","content":"ok"}],"role":"user"},"timestamp":"2025-06-01T10:00:00.123Z","type":"user"}`),
		"stored":                              []byte(`{"line":2,"message":{"content":"SLOW 3","role":"user"},"type":"message_stored"}`),
		"text ends like an assistant message": chatFrame(7, `{"type":"assistant","message":{"content":[{"text":"\"timestamp\":\"2025-06-01T10:00:00.123Z\",\"uuid\":\"u\"","type":"text"}],"role":"user"},"uuid":"u"}`),
		"escaped quote in uuid":               chatFrame(8, `{"type":"assistant","timestamp":"2025-06-01T10:00:00.123Z","uuid":"a\"b"}`),
		"bad stamp":                           chatFrame(8, `{"type":"assistant","timestamp":"2025-13-01T10:00:00.123Z","uuid":"u"}`),
		"user ends alike":                     chatFrame(8, `{"type":"user","timestamp":"2025-06-01T10:00:00.123Z","uuid":"u"}`),
		"init, type first":                    chatFrame(3, `{"type":"system","subtype":"init","tools":["Bash","Edit"],"session_id":"s"}`),
		"result, type first":                  chatFrame(9, `{"type":"result","subtype":"success","result":"\"type\":\"assistant\"","session_id":"s"}`),
		"escaped type":                        chatFrame(9, `{"type":"res\u0075lt","subtype":"success"}`),
		"text says result":                    chatFrame(6, `{"message":{"content":[{"text":"\"type\":\"result\"","type":"text"}],"role":"assistant"},"timestamp":"2025-06-01T10:00:00.123Z","type":"assistant"}`),
	}
	for name, raw := range frames {
		t.Run(name, func(t *testing.T) {
			k, at, err := parseFrame(raw)
			wk, wat, werr := decodeFrame(raw)
			if k != wk || !at.Equal(wat) || (err != nil) != (werr != nil) {
				t.Errorf("parseFrame: %v %v %v; decoding: %v %v %v", k, at, err, wk, wat, werr)
			}
		})
	}
	if k, _, _ := parseFrame(frames["assistant"]); k != kindAssistant {
		t.Errorf("assistant frame: kind %v", k)
	}
	// The load's assistant frames take the fast path.
	if at, ok := assistantStamp(frames["assistant"]); !ok || !at.Equal(time.Date(2025, 6, 1, 10, 0, 0, 123e6, time.UTC)) {
		t.Errorf("assistant frame not recognised by its end: %v %v", at, ok)
	}
	if k, _, _ := parseFrame(frames["result"]); k != kindResult {
		t.Errorf("result frame: kind %v", k)
	}
	// The load's frames are told without decoding them, in chat's layout.
	for _, name := range []string{"assistant", "result, type first", "init, type first"} {
		if _, _, ok := fastFrame(frames[name]); !ok {
			t.Errorf("%s frame: not recognised by its ends: %s", name, frames[name])
		}
	}
	if k, _, _ := parseFrame(frames["result, type first"]); k != kindResult {
		t.Errorf("result frame (type first): kind %v", k)
	}
}

func TestFrameLine(t *testing.T) {
	for raw, want := range map[string]int64{
		`{"data":{"type":"assistant","line":"x"},"line":42,"type":"agent_message"}`:       42,
		`{"line":7,"message":{"content":"SLOW 3","role":"user"},"type":"message_stored"}`: 7,
		`{"type":"pong"}`:                         0,
		`{"line":"raw text","type":"raw_output"}`: 0,
	} {
		if got := frameLine([]byte(raw)); got != want {
			t.Errorf("frameLine(%s) = %d, want %d", raw, got, want)
		}
	}
}

func TestParseStamp(t *testing.T) {
	for _, v := range []string{"2025-06-01T10:00:00.123Z", "1999-12-31T23:59:59.999Z", "2026-02-28T00:00:00.000Z"} {
		want, err := time.Parse(fakeTimestamp, v)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := parseStamp([]byte(v)); !ok || !got.Equal(want) {
			t.Errorf("parseStamp(%s) = %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"2025-06-01T10:00:00.123", "2025-06-01 10:00:00.123Z", "2025-00-01T10:00:00.123Z", "2025-06-01T24:00:00.123Z", "2025-06-01T10:00:00.1x3Z", "yesterday"} {
		if _, ok := parseStamp([]byte(v)); ok {
			t.Errorf("parseStamp(%s) accepted", v)
		}
	}
}

func TestPhasesOf(t *testing.T) {
	byIndex := func(n int) [][]time.Duration {
		out := make([][]time.Duration, n)
		for k := range out {
			out[k] = []time.Duration{time.Duration(k+1) * time.Millisecond}
		}
		return out
	}
	ranges := func(ps []phase) [][2]int {
		var out [][2]int
		for _, p := range ps {
			out = append(out, [2]int{p.from, p.to})
		}
		return out
	}
	for n, want := range map[int][][2]int{
		1:  {{1, 1}},
		4:  {{1, 1}, {2, 4}},
		30: {{1, 1}, {2, 5}, {6, 30}},
		90: {{1, 1}, {2, 5}, {6, 30}, {31, 90}},
	} {
		got := phasesOf(byIndex(n))
		if g := ranges(got); len(g) != len(want) || (len(g) > 0 && (g[len(g)-1] != want[len(want)-1] || g[0] != want[0])) {
			t.Errorf("%d messages: phases %v, want %v", n, g, want)
		}
		if n == 90 && got[3].max != 90*time.Millisecond {
			t.Errorf("messages 31–90: max %v, want 90ms", got[3].max)
		}
	}
}

func TestNextFrame(t *testing.T) {
	two := append(wsFrames([]byte("hello"), bytes.Repeat([]byte("x"), 300)), 0x81) // and one byte of a third
	op, p, n, err := nextFrame(two)
	if err != nil || op != 1 || string(p) != "hello" || n != 7 {
		t.Fatalf("first: %d %q %d %v", op, p, n, err)
	}
	op, p, n, err = nextFrame(two[n:])
	if err != nil || op != 1 || len(p) != 300 || n != 304 {
		t.Fatalf("second: %d %d bytes, n %d, %v", op, len(p), n, err)
	}
	if _, _, n, err := nextFrame(two[7+304:]); n != 0 || err != nil {
		t.Fatalf("a partial frame: n %d, %v", n, err)
	}
	big := wsFrames(bytes.Repeat([]byte("y"), 70000))
	if _, p, n, err := nextFrame(big); err != nil || len(p) != 70000 || n != len(big) {
		t.Fatalf("64-bit length: %d bytes, n %d, %v", len(p), n, err)
	}
	if _, _, n, err := nextFrame(big[:9]); n != 0 || err != nil {
		t.Fatalf("a partial header: n %d, %v", n, err)
	}
	for name, b := range map[string][]byte{"masked": {0x81, 0x85, 1, 2, 3, 4, 'a'}, "fragment": {0x01, 0x01, 'a'}} {
		if _, _, _, err := nextFrame(b); err == nil {
			t.Errorf("%s frame accepted", name)
		}
	}
}

// feed splits what arrives in pieces into whole frames
// and counts only while armed.
func TestSockFeed(t *testing.T) {
	s := &sock{}
	s.frame([]byte(`{"type":"pong"}`), time.Now()) // not armed: not counted
	done := s.arm(true, 2)
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	data := wsFrames(assistantFrame("s", 1, 0, " chunk 1", stamp), resultFrame("s", 2, "x"))
	now := stamp.Add(40 * time.Millisecond)
	for i := range data { // a byte at a time
		s.feed(data[i:i+1], now)
	}
	select {
	case <-done:
	default:
		t.Fatal("the result did not end the phase")
	}
	if s.frames != 2 || len(s.lat) != 1 || s.lat[0] != 40*time.Millisecond || s.lastLine != 2 || len(s.in) != 0 {
		t.Errorf("frames %d, lat %v, last line %d, %d bytes left", s.frames, s.lat, s.lastLine, len(s.in))
	}
}
