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

// Markers of the frames the load consists of: chat encodes an
// agent_message frame's fields in the order of libs/protocol's
// AgentMessageFrame, {"type":"agent_message","data":…,"line":N}, and the
// agent-sdk provider's data begins with its type; the fake CLI writes its
// other keys in order, so an assistant message's data ends with its
// timestamp and its uuid.
var (
	agentPrefix = []byte(`{"type":"agent_message","data":{"type":"`)
	dataEnd     = []byte(`},"line":`)
	stampKey    = []byte(`"timestamp":"`)
	uuidKey     = []byte(`","uuid":"`)
)

// parseFrame classifies a frame and, for an assistant message, returns the
// time the agent wrote it. The agent messages of the load (an assistant
// message on every socket every interval; the system/init and the result
// of each turn, a few KiB each) are recognised by their ends, without
// decoding them (the client shares the machine with the services: its
// cost is theirs); anything else is decoded.
func parseFrame(raw []byte) (kind, time.Time, error) {
	if k, at, ok := fastFrame(raw); ok {
		return k, at, nil
	}
	return decodeFrame(raw)
}

// fastFrame is parseFrame's way without decoding: ok false when raw is not
// an agent_message frame in chat's layout whose kind its ends tell.
func fastFrame(raw []byte) (kind, time.Time, bool) {
	if !bytes.HasPrefix(raw, agentPrefix) || raw[len(raw)-1] != '}' {
		return kindOther, time.Time{}, false
	}
	typ, _, _ := bytes.Cut(raw[len(agentPrefix):], []byte{'"'})
	switch string(typ) {
	case "assistant":
		if at, ok := assistantStamp(raw); ok {
			return kindAssistant, at, true
		}
	case "result":
		return kindResult, time.Time{}, true
	default:
		if bytes.IndexByte(typ, '\\') < 0 {
			return kindOther, time.Time{}, true
		}
	}
	return kindOther, time.Time{}, false
}

// assistantStamp returns the timestamp of an agent_message frame whose
// data object ends `"timestamp":"<T>","uuid":"<U>"}`: the last keys of
// the object itself, as the quotes and commas between them are not inside
// a string (a quote inside a string is escaped).
func assistantStamp(raw []byte) (time.Time, bool) {
	end := bytes.LastIndex(raw, dataEnd)
	if end < 1 || raw[end-1] != '"' {
		return time.Time{}, false
	}
	open := bytes.LastIndexByte(raw[:end-1], '"') // the uuid's opening quote
	if open < 0 || bytes.IndexByte(raw[open+1:end-1], '\\') >= 0 {
		return time.Time{}, false
	}
	head := raw[:open+1]
	if !bytes.HasSuffix(head, uuidKey) {
		return time.Time{}, false
	}
	head = head[:len(head)-len(uuidKey)]
	n := len(fakeTimestamp)
	if len(head) < len(stampKey)+n || !bytes.Equal(head[len(head)-n-len(stampKey):len(head)-n], stampKey) {
		return time.Time{}, false
	}
	return parseStamp(head[len(head)-n:])
}

// parseStamp parses a fakeTimestamp (2006-01-02T15:04:05.000Z), digit by
// digit.
func parseStamp(b []byte) (time.Time, bool) {
	if len(b) != len(fakeTimestamp) {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	for i := range len(fakeTimestamp) {
		if c := fakeTimestamp[i]; (c < '0' || c > '9') && b[i] != c {
			return time.Time{}, false
		}
	}
	year, month, day, hour, minute, sec, ms := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 || ms < 0 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*int(time.Millisecond), time.UTC), true
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
