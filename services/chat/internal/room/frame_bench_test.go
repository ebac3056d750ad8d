package room

import (
	"encoding/json"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// The frames of the hot path, encoded once per broadcast, and the fan-out
// of one frame to a session's sockets. Run before and after a change of
// how frames are encoded:
//
//	go test -run XXX -bench . -benchmem ./internal/room/

// benchAssistant is an assistant message of the size the chat benchmark
// streams.
var benchAssistant = json.RawMessage(`{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"` +
	"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation." +
	`"}],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":34}},"session_id":"0b6c3c1e-2b7a-4f8e-9d3a-6c1f2e3d4a5b","timestamp":1764100000000}`)

func BenchmarkAgentMessageFrame(b *testing.B) {
	m := store.Message{SessionID: "K7QZ3XH2M4A5B6C7D2E3F4G5H6", Line: 42, Kind: store.KindAgent, Payload: benchAssistant}
	b.ReportAllocs()
	for b.Loop() {
		_ = FrameOf(m)
	}
}

func BenchmarkPromptFrame(b *testing.B) {
	m := store.Message{SessionID: "K7QZ3XH2M4A5B6C7D2E3F4G5H6", Line: 41, Kind: store.KindUserPrompt, Payload: json.RawMessage(`{"role":"user","content":"list the files"}`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = FrameOf(m)
	}
}

func BenchmarkPermissionRequestFrame(b *testing.B) {
	p := agent.PermissionRequest{RequestID: "r1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls -la"}`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = PermissionRequestFrame(p, false)
	}
}

type countSink struct{ n int }

func (s *countSink) Send(Frame) { s.n++ }

// BenchmarkBroadcast100 fans one encoded frame out to 100 sockets.
func BenchmarkBroadcast100(b *testing.B) {
	m := NewManager(Config{})
	var r *Room
	for range 100 {
		r, _ = m.Join("S", &countSink{})
	}
	f := FrameOf(store.Message{SessionID: "S", Line: 1, Kind: store.KindAgent, Payload: benchAssistant})
	b.ReportAllocs()
	for b.Loop() {
		f.Line = 0
		r.Broadcast(f)
	}
}
