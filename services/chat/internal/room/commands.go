package room

import (
	"context"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/tasks"
)

// commandWriteTimeout bounds the Redis write of one command report.
const commandWriteTimeout = 2 * time.Second

// recordCommand keeps a report of the agent's background command in Redis
// (tasks.CodexStore), where GET /api/tasks of every instance finds it. It
// writes in the pump, in order, so that a later report is never
// overwritten by an earlier one. Without Redis nothing is kept.
func (r *Room) recordCommand(ctx context.Context, e agent.Command, threadID string) {
	if r.m.cfg.Redis == nil || e.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, commandWriteTimeout)
	defer cancel()
	s := tasks.CodexStore{Redis: r.m.cfg.Redis, Prefix: r.m.cfg.Prefix}
	err := s.Put(ctx, tasks.CodexCommand{
		SessionID: r.id, ThreadID: threadID, ItemID: e.ID, Command: e.Command, Cwd: e.Cwd,
		ProcessID: e.ProcessID, State: e.State, ExitCode: e.ExitCode,
		Output: e.Output, OutputBytes: e.OutputBytes,
	})
	if err != nil {
		r.m.log.ErrorContext(ctx, "record background command", "session_id", r.id, "err", err)
	}
}
