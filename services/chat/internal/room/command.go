package room

import (
	"context"
	"encoding/json"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Command is a client message that acts on the session, validated by the
// socket layer; it runs on the instance that owns the session.
type Command struct {
	Type      string                   `json:"type"`
	Content   string                   `json:"content,omitempty"`
	Images    []Image                  `json:"images,omitempty"`
	Mode      string                   `json:"mode,omitempty"`
	RequestID string                   `json:"request_id,omitempty"`
	Decision  agent.PermissionDecision `json:"decision"`
	Answers   json.RawMessage          `json:"answers,omitempty"`
	// AnsweredBy labels the page that answered a permission request.
	AnsweredBy string `json:"answered_by,omitempty"`
	// QueueID names a queued prompt (cancel_queued, send_now).
	QueueID string `json:"queue_id,omitempty"`
	// Digest is RequestDigest of the request an apiAnswer is for.
	Digest string `json:"digest,omitempty"`
}

// queueKick asks the owner to send the first queued prompt if the session
// is idle (a socket joined a session with prompts waiting); the socket
// layer sends it, never a client.
const queueKick = "queue_kick"

// KickQueue makes the owner send the first queued prompt if nothing runs.
func (r *Room) KickQueue(ctx context.Context, sender Sink) {
	r.Do(ctx, sender, Command{Type: queueKick})
}

// Do runs cmd for sender here when this instance owns the session (or
// claims it now), or forwards it to the owner.
func (r *Room) Do(ctx context.Context, sender Sink, cmd Command) {
	if r.m.multi() {
		own, err := r.claim(ctx)
		if err != nil {
			r.m.log.ErrorContext(ctx, "claim session", "session_id", r.id, "err", err)
			sender.Send(ErrorFrame("could not claim the session: " + err.Error()))
			return
		}
		if !own {
			r.forward(ctx, sender, cmd)
			return
		}
	}
	r.exec(ctx, sender, cmd)
}

func (r *Room) exec(ctx context.Context, sender Sink, cmd Command) {
	switch cmd.Type {
	case "user_message":
		r.UserMessage(ctx, sender, cmd.Content, cmd.Images)
	case "stop":
		if _, err := r.Stop(ctx); err != nil {
			sender.Send(ErrorFrame("stop: " + err.Error()))
		}
	case "set_permission_mode":
		if err := r.SetPermissionMode(ctx, cmd.Mode); err != nil {
			sender.Send(ErrorFrame(err.Error()))
		}
	case "permission_response":
		if string(cmd.Decision.UpdatedInput) == "null" { // a nil one, through JSON
			cmd.Decision.UpdatedInput = nil
		}
		r.PermissionResponse(ctx, cmd.RequestID, cmd.Decision, cmd.AnsweredBy)
	case "clear_session":
		if _, err := r.Clear(ctx); err != nil {
			r.m.log.ErrorContext(ctx, "clear session", "session_id", r.id, "err", err)
			sender.Send(ErrorFrame("clear_session: could not clear the session"))
		}
	case "tool_answer":
		if err := r.ToolAnswer(ctx, cmd.RequestID, cmd.Answers, cmd.AnsweredBy); err != nil {
			sender.Send(ErrorFrame(err.Error()))
		}
	case "cancel_queued":
		r.CancelQueued(ctx, sender, cmd.QueueID)
	case "send_now":
		r.SendNow(ctx, sender, cmd.QueueID)
	case queueKick:
		r.promptMu.Lock()
		r.sendFirstLocked(ctx)
		r.promptMu.Unlock()
	case apiStop, apiMode, apiEnd, apiAnswer:
		r.execAPI(ctx, sender, cmd)
	default:
		sender.Send(ErrorFrame("unknown command " + cmd.Type))
	}
}
