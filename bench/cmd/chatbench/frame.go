package main

import (
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

// parseFrame classifies a frame and, for an assistant message, returns the
// time the agent wrote it.
func parseFrame(raw []byte) (kind, time.Time, error) {
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
