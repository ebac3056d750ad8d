package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
)

// Codex's background commands (Codex reports them in its protocol, not in
// files): the room of the session whose agent runs one records each report
// in Redis (CodexStore.Put), and any chat instance lists them from there.
// Each task is a key <prefix>codex-task:<task_id> (JSON, expiring CodexTTL
// after its last report) with an index, the sorted set <prefix>codex-tasks
// (score: last report, in ms), which keeps the newest CodexKeep.

// Limits of the Codex tasks.
const (
	// CodexTTL is how long a Codex task is kept after its last report.
	CodexTTL = 24 * time.Hour
	// CodexKeep is how many Codex tasks are kept (the newest).
	CodexKeep = 1000
	// CodexIDPrefix starts every Codex task id.
	CodexIDPrefix = "codex-"
	// RunningByAgent is Task.RunningBy of a Codex task: the agent's
	// protocol reported it running and has not reported its end.
	RunningByAgent = "agent_report"
)

// CodexID is the task id of the Codex command item in a chat session: a
// hash, so that it is unique across sessions and cannot be a Claude task's
// file name by chance.
func CodexID(sessionID, itemID string) string {
	sum := sha256.Sum256([]byte(sessionID + "\x00" + itemID))
	return CodexIDPrefix + hex.EncodeToString(sum[:12])
}

// IsCodexID reports whether id names a Codex task.
func IsCodexID(id string) bool { return strings.HasPrefix(id, CodexIDPrefix) }

// CodexCommand is one report of a Codex background command, as the room
// records it.
type CodexCommand struct {
	SessionID string `json:"session_id"`
	// ThreadID is Codex's thread (the session's provider session id).
	ThreadID  string `json:"thread_id,omitempty"`
	ItemID    string `json:"item_id"`
	Command   string `json:"command"`
	Cwd       string `json:"cwd,omitempty"`
	ProcessID string `json:"process_id,omitempty"`
	// State is running, completed, failed, declined or lost (the agent
	// process ended first).
	State    string `json:"state"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Output is the end of the output (at most the provider's tail);
	// OutputBytes how much there was in all.
	Output      string    `json:"output"`
	OutputBytes int64     `json:"output_bytes"`
	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// CodexStore keeps the Codex tasks in Redis.
type CodexStore struct {
	Redis  *redis.Client
	Prefix string
	// Now tells the time; nil means time.Now.
	Now func() time.Time
}

func (s *CodexStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *CodexStore) keys() redisx.Keys { return redisx.Keys{Prefix: s.Prefix} }

// Put records a report of a command; the first one of a task sets its
// StartedAt (kept by the later ones).
func (s *CodexStore) Put(ctx context.Context, c CodexCommand) error {
	id := CodexID(c.SessionID, c.ItemID)
	key := s.keys().Key("codex-task", id)
	now := s.now().UTC()
	c.UpdatedAt = now
	if old, err := s.Redis.Get(ctx, key).Bytes(); err == nil {
		var prev CodexCommand
		if json.Unmarshal(old, &prev) == nil && !prev.StartedAt.IsZero() {
			c.StartedAt = prev.StartedAt
		}
	} else if !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read codex task %s: %w", id, err)
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = now
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode codex task %s: %w", id, err)
	}
	index := s.keys().Key("codex-tasks")
	pipe := s.Redis.TxPipeline()
	pipe.Set(ctx, key, b, CodexTTL)
	pipe.ZAdd(ctx, index, redis.Z{Score: float64(now.UnixMilli()), Member: id})
	pipe.ZRemRangeByScore(ctx, index, "-inf", "("+strconv.FormatInt(now.Add(-CodexTTL).UnixMilli(), 10))
	pipe.ZRemRangeByRank(ctx, index, 0, -CodexKeep-1)
	pipe.Expire(ctx, index, CodexTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("record codex task %s: %w", id, err)
	}
	return nil
}

// List returns the kept Codex tasks, newest first, that filter keeps
// (Project, SessionID, Running; not Limit).
func (s *CodexStore) List(ctx context.Context, filter Filter) ([]Task, error) {
	index := s.keys().Key("codex-tasks")
	ids, err := s.Redis.ZRangeArgs(ctx, redis.ZRangeArgs{Key: index, Start: 0, Stop: CodexKeep - 1, Rev: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("list codex tasks: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys().Key("codex-task", id)
	}
	vals, err := s.Redis.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read codex tasks: %w", err)
	}
	var out []Task
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // expired: the index forgets it within CodexTTL
		}
		t, ok := codexTask(ids[i], []byte(raw))
		if !ok || !filter.keeps(t) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// Find returns the Codex task id with its kept output, or ErrNotFound.
func (s *CodexStore) Find(ctx context.Context, id string) (Task, string, error) {
	raw, err := s.Redis.Get(ctx, s.keys().Key("codex-task", id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Task{}, "", fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, "", fmt.Errorf("read codex task %s: %w", id, err)
	}
	var c CodexCommand
	if err := json.Unmarshal(raw, &c); err != nil {
		return Task{}, "", fmt.Errorf("decode codex task %s: %w", id, err)
	}
	t, _ := codexTask(id, raw)
	return t, c.Output, nil
}

// keeps reports whether a Codex task passes filter (not its Limit).
func (f Filter) keeps(t Task) bool {
	switch {
	case f.Project != "" && t.Project != f.Project,
		f.SessionID != "" && t.SessionID != f.SessionID,
		f.Running != nil && t.Running != *f.Running:
		return false
	}
	return true
}

// codexTask is the Task of a recorded command, with its preview.
func codexTask(id string, raw []byte) (Task, bool) {
	var c CodexCommand
	if json.Unmarshal(raw, &c) != nil {
		return Task{}, false
	}
	t := Task{
		ID: id, Provider: "codex", SessionID: c.SessionID, AgentSession: c.ThreadID,
		Size: c.OutputBytes, UpdatedAt: c.UpdatedAt, Running: c.State == "running", RunningBy: RunningByAgent,
		Command: c.Command, Cwd: c.Cwd, ProcessID: c.ProcessID, State: c.State, ExitCode: c.ExitCode,
	}
	if c.Cwd != "" && filepath.IsAbs(c.Cwd) {
		t.Project = ProjectKey(filepath.Clean(c.Cwd))
	}
	kept := codexKeptStart(c)
	p := c.Output
	truncated := kept > 0
	if len(p) > PreviewBytes {
		p, truncated = p[len(p)-PreviewBytes:], true
	}
	if truncated {
		p = trimPreview(p)
	}
	t.Preview, t.PreviewTruncated = &p, truncated
	return t, true
}

// codexKeptStart is the offset of the first kept output byte.
func codexKeptStart(c CodexCommand) int64 { return max(c.OutputBytes-int64(len(c.Output)), 0) }

// trimPreview starts b after a newline in its first half, else at a rune
// start.
func trimPreview(b string) string {
	if i := strings.IndexByte(b, '\n'); i >= 0 && i < len(b)/2 {
		return b[i+1:]
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return b
}

// ReadCodex returns up to limit bytes of a Codex task's output from
// offset. Only the kept end of the output can be read: an offset before it
// starts the chunk where the kept output starts (Chunk.Offset says where).
func ReadCodex(t Task, kept string, offset, limit int64) (Chunk, error) {
	size := max(t.Size, int64(len(kept)))
	start := size - int64(len(kept))
	if offset > size {
		return Chunk{}, fmt.Errorf("offset %d, size %d: %w", offset, size, ErrOffset)
	}
	offset = max(offset, start)
	b := kept[offset-start:]
	b = b[:min(int64(len(b)), limit)]
	if offset+int64(len(b)) < size {
		for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRuneInString(b[len(b)-i:]) && len(b) > i {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	return Chunk{
		Offset: offset, NextOffset: offset + int64(len(b)),
		Content: strings.ToValidUTF8(b, "\uFFFD"), EOF: offset+int64(len(b)) >= size,
	}, nil
}
