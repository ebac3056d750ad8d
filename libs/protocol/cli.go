package protocol

import (
	"encoding/json"
	"time"
)

// The bodies of /api/cli-sessions (docs/api.md "CLI sessions"): the
// sessions Claude Code and Codex keep on disk when a user runs them in a
// plain terminal, listed, read as the same LogMessage lines a session's log
// gives, and continued as svc-code sessions.

// The providers of the CLI session routes (their {provider} path segment).
const (
	CLIProviderClaude = "claude"
	CLIProviderCodex  = "codex"
)

// CLISession is one transcript file of a CLI.
type CLISession struct {
	Provider string `json:"provider" tstype:"'claude' | 'codex'"`
	ID       string `json:"id"`
	// Project is the directory the CLI ran in ("" when the file's head
	// does not say).
	Project string `json:"project"`
	// Title is the first user prompt, on one line, at most 120 characters;
	// "" when there is none yet.
	Title        string    `json:"title"`
	LastActivity time.Time `json:"last_activity"`
	Size         int64     `json:"size"`
	// SvcSessionID is the svc-code session that runs this CLI session
	// (its provider session or thread id is this id), if any.
	SvcSessionID string `json:"svc_session_id,omitempty"`
	// File is the path relative to the provider's root (only on GET
	// /api/cli-sessions/{provider}/{id}).
	File string `json:"file,omitempty"`
}

// CLISessionRef names a CLI session: the session object's cli_session, on
// a session made by "Continue here" (POST
// /api/cli-sessions/{provider}/{id}/continue), links it to the transcript
// that holds its history before it.
type CLISessionRef struct {
	Provider string `json:"provider" tstype:"'claude' | 'codex'"`
	ID       string `json:"id"`
}

// CLISessionList is GET /api/cli-sessions.
type CLISessionList struct {
	Sessions []CLISession `json:"sessions"`
	Total    int          `json:"total"`
}

// CLIMessages is GET /api/cli-sessions/{provider}/{id}/messages: the
// records of the byte range [Start, End) of the file, one LogMessage each
// (sid "<id>:<line>", line the record's line in the file).
type CLIMessages struct {
	Messages      []LogMessage `json:"messages"`
	Start         int64        `json:"start"`
	End           int64        `json:"end"`
	Size          int64        `json:"size"`
	HasMoreBefore bool         `json:"has_more_before"`
}

// CLIContinueRequest is POST /api/cli-sessions/{provider}/{id}/continue.
type CLIContinueRequest struct {
	Title *string `json:"title,omitempty"`
}

// CLIContinueResponse is its answer: the svc-code session (201 when it is
// new; 200 with Existing when an svc-code session already runs this CLI
// session) and the CLI session it continues.
type CLIContinueResponse struct {
	Session    Session    `json:"session"`
	CLISession CLISession `json:"cli_session"`
	Existing   bool       `json:"existing,omitempty"`
}

// The payload types of CLI transcript lines that are not agent messages.
const (
	PayloadRawRecord  = "raw_record"
	PayloadCLIMeta    = "cli_meta"
	PayloadParseError = "parse_error"
)

// CLIRawRecord is the payload (kind "agent") of a record the converter
// does not know (or a line that is JSON but not an object): the value as
// written. Nothing is dropped.
type CLIRawRecord struct {
	Type   string          `json:"type" tstype:"'raw_record'"`
	Record json.RawMessage `json:"record"`
}

// CLIMetaRecord is the payload (kind "agent") of a record the converter
// knows carries nothing to show in a conversation: the CLI's bookkeeping
// (Claude Code's attachments, API request shapes, queue operations; Codex's
// turn settings, token counts) or a copy of what another record of the
// file shows (Codex writes prompts, answers and tool calls twice). The
// record is kept as written.
type CLIMetaRecord struct {
	Type string `json:"type" tstype:"'cli_meta'"`
	// RecordType is the record's type ("attachment", "event_msg/token_count").
	RecordType string          `json:"record_type"`
	Record     json.RawMessage `json:"record"`
}

// CLIParseError is the payload (kind "notice") of a line that is not JSON.
// Role, Level and Content make it a StoredNotice too, so that it shows as
// one.
type CLIParseError struct {
	Type    string `json:"type" tstype:"'parse_error'"`
	Role    string `json:"role" tstype:"'notice'"`
	Level   string `json:"level" tstype:"'warning'"`
	Content string `json:"content"`
	// File is the path relative to the provider's root.
	File  string `json:"file"`
	Line  int64  `json:"line"`
	Error string `json:"error"`
	// Text is the start of the line (at most 200 bytes).
	Text string `json:"text"`
}
