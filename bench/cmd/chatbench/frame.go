package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// frame is what the benchmark reads of a server frame of /chat.
type frame struct {
	Type string `json:"type"`
	Line int64  `json:"line"`
	Data struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
	} `json:"data"`
}

// fakeTimestamp is the layout of the fake CLI's "timestamp" field:
// milliseconds, UTC, truncated.
const fakeTimestamp = "2006-01-02T15:04:05.000Z"

// kind of a frame, for the benchmark.
type kind int

const (
	kindOther     kind = iota
	kindAssistant      // agent_message of an assistant message: timed
	kindResult         // agent_message of the turn's result: the end
)

// Markers of the frames the load consists of: chat encodes a frame's
// fields in key order, so an agent_message frame ends with its type; the
// fake CLI's SLOW turn writes assistant messages with a timestamp and one
// result.
var (
	agentSuffix   = []byte(`,"type":"agent_message"}`)
	assistantMark = []byte(`"type":"assistant"`)
	resultMark    = []byte(`"type":"result"`)
	userMark      = []byte(`"type":"user"`)
	stampMark     = []byte(`"timestamp":"`)
)

// parseFrame classifies a frame and, for an assistant message, returns the
// time the agent wrote it. The frames of the load are recognised by their
// markers without decoding them (the client shares the machine with the
// services: its cost is theirs); anything else is decoded.
func parseFrame(raw []byte) (kind, time.Time, error) {
	if bytes.HasSuffix(raw, agentSuffix) && !bytes.Contains(raw, userMark) {
		isAssistant, isResult := bytes.Contains(raw, assistantMark), bytes.Contains(raw, resultMark)
		switch i := bytes.Index(raw, stampMark); {
		case isAssistant && !isResult && i >= 0 && len(raw) >= i+len(stampMark)+len(fakeTimestamp):
			at, err := time.Parse(fakeTimestamp, string(raw[i+len(stampMark):i+len(stampMark)+len(fakeTimestamp)]))
			if err == nil {
				return kindAssistant, at, nil
			}
		case isResult && !isAssistant:
			return kindResult, time.Time{}, nil
		}
	}
	return decodeFrame(raw)
}

var lineMark = []byte(`"line":`)

// frameLine is the line of a logged frame (0 for others): the last "line"
// field, which for an agent_message is the frame's own (chat encodes its
// fields in key order: data, line, type).
func frameLine(raw []byte) int64 {
	i := bytes.LastIndex(raw, lineMark)
	if i < 0 {
		return 0
	}
	var n int64
	for _, c := range raw[i+len(lineMark):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// decodeFrame is parseFrame by decoding the frame.
func decodeFrame(raw []byte) (kind, time.Time, error) {
	var f frame
	if err := json.Unmarshal(raw, &f); err != nil {
		return kindOther, time.Time{}, fmt.Errorf("frame: %w", err)
	}
	if f.Type != "agent_message" {
		return kindOther, time.Time{}, nil
	}
	switch f.Data.Type {
	case "result":
		return kindResult, time.Time{}, nil
	case "assistant":
		at, err := time.Parse(fakeTimestamp, f.Data.Timestamp)
		if err != nil {
			return kindAssistant, time.Time{}, fmt.Errorf("assistant timestamp: %w", err)
		}
		return kindAssistant, at, nil
	}
	return kindOther, time.Time{}, nil
}
