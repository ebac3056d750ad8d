package main

import (
	"testing"
	"time"
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
