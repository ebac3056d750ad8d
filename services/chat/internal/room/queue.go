package room

import (
	"context"
	"errors"
	"fmt"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// The prompt queue (docs/api.md, "Prompt queue"). A user_message that
// arrives while a turn runs, or while older prompts wait, is kept in
// PostgreSQL (store.Enqueue) instead of going into the running turn: its
// sender gets user_message_queued and every socket the whole queue
// (`queue`). When a turn ends (and whenever the owner finds the session
// idle with prompts waiting: a user_message, send_now, a socket joining,
// a new owner), the first prompt leaves the queue and enters the log in
// one transaction (store.DequeueAppend), then goes to the agent like any
// prompt. Every decision runs on the session's owner, under promptMu, so
// that prompts keep their order; the dequeue after a turn runs on the
// room's command goroutine, never in the pump.

// kickQueue sends the first queued prompt if the session is idle, in the
// background (the pump calls it at a turn's end).
func (r *Room) kickQueue() {
	r.enqueue(func() {
		r.promptMu.Lock()
		defer r.promptMu.Unlock()
		r.sendFirstLocked(context.Background())
	})
}

// queueLenLocked returns how many prompts wait, read from PostgreSQL the
// first time; r.promptMu must be held.
func (r *Room) queueLenLocked(ctx context.Context) (int, error) {
	if r.queueKnown {
		return r.queueLen, nil
	}
	q, err := r.readQueue(ctx)
	if err != nil {
		return 0, err
	}
	r.setQueueLenLocked(len(q), true)
	return r.queueLen, nil
}

// readQueue reads the session's queue, again while PostgreSQL cannot be
// reached (storage.go).
func (r *Room) readQueue(ctx context.Context) (q []store.Queued, err error) {
	err = r.m.retryStore(ctx, true, func(ctx context.Context) error {
		q, err = r.m.cfg.Store.Queue(ctx, r.id)
		return err
	})
	return q, err
}

// NoteQueueLen tells the room its queue's length, read when a socket
// joined, unless it knows it already: the first prompt then needs no read.
// Only the owner changes the queue, and it always knows the length once it
// has, so a length read before such a change is never taken.
func (r *Room) NoteQueueLen(n int) {
	// Never waits: whoever holds promptMu is at the queue, and will know.
	if !r.promptMu.TryLock() {
		return
	}
	defer r.promptMu.Unlock()
	if !r.queueKnown {
		r.setQueueLenLocked(n, true)
	}
}

// QueueEmpty reports whether the room knows for sure that its queue is
// empty: it owns the session (only the owner changes the queue) and has
// read or kept the queue's length since. A joining socket then needs no
// read of it.
func (r *Room) QueueEmpty() bool {
	// Without promptMu, which a send_now holds through a stop.
	return r.queueEmpty.Load() && r.m.ownedHere(r)
}

// setQueueLenLocked keeps the queue's length; r.promptMu must be held.
func (r *Room) setQueueLenLocked(n int, known bool) {
	r.queueLen, r.queueKnown = n, known
	r.queueEmpty.Store(known && n == 0)
}

// queueChangedLocked tells every socket the whole queue and the events
// sockets its length; r.promptMu must be held.
func (r *Room) queueChangedLocked(ctx context.Context) {
	q, err := r.readQueue(ctx)
	if err != nil {
		r.setQueueLenLocked(0, false)
		r.m.log.ErrorContext(ctx, "read the prompt queue", "session_id", r.id, "err", err)
		return
	}
	r.setQueueLenLocked(len(q), true)
	items := make([]protocol.QueuedPrompt, len(q))
	for i, it := range q {
		items[i] = it.JSON()
	}
	r.Broadcast(NewFrame(0, protocol.QueueFrame{Type: protocol.FrameQueue, Items: items}))
	r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
}

func (r *Room) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// queuePrompt keeps a prompt in the queue; r.promptMu must be held.
func (r *Room) queuePromptLocked(ctx context.Context, sender Sink, content string, images []Image) {
	// Tried again while PostgreSQL cannot be reached: by its id, a prompt
	// whose first try was committed is not queued twice.
	id, unsure := store.NewID(), false
	var q store.Queued
	err := r.m.retryStore(ctx, true, func(ctx context.Context) error {
		var err error
		q, err = r.m.cfg.Store.EnqueueAs(ctx, id, r.id, content, images)
		unsure = unsure || store.Unavailable(err) && !store.NotSent(err)
		return err
	})
	switch {
	case errors.Is(err, store.ErrQueueFull):
		sender.Send(ErrorFrame(fmt.Sprintf("user_message: the queue holds %d prompts already: wait for it, or cancel some", store.MaxQueued)))
		return
	case store.Unavailable(err):
		r.m.log.ErrorContext(ctx, "queue prompt", "session_id", r.id, "err", err)
		sender.Send(storageError(unsure))
		return
	case err != nil:
		r.m.log.ErrorContext(ctx, "queue prompt", "session_id", r.id, "err", err)
		sender.Send(ErrorFrame("could not store the message"))
		return
	}
	sender.Send(NewFrame(0, protocol.UserMessageQueuedFrame{Type: protocol.FrameUserMessageQueued, QueueID: q.ID}))
	r.queueChangedLocked(ctx)
}

// sendFirstLocked sends the first queued prompt when no turn runs;
// r.promptMu must be held.
func (r *Room) sendFirstLocked(ctx context.Context) {
	if r.isRunning() || r.m.closing.Load() {
		return // (shutting down: the queue waits in PostgreSQL)
	}
	if n, err := r.queueLenLocked(ctx); err != nil || n == 0 {
		if err != nil {
			r.m.log.ErrorContext(ctx, "read the prompt queue", "session_id", r.id, "err", err)
		}
		return
	}
	prov, perr := r.provider(ctx)
	r.mu.Lock()
	lock := perr == nil && !r.providerLocked
	r.mu.Unlock()
	r.appendMu.Lock()
	// Tried again while PostgreSQL cannot be reached: by its key, a prompt
	// whose first try was committed is not taken twice from the queue.
	var q store.Queued
	var msg store.Message
	var ok bool
	key, after := store.NewAppendKey(), r.sentLine()
	err := r.m.retryStore(ctx, true, func(ctx context.Context) error {
		var err error
		q, msg, ok, err = r.m.cfg.Store.DequeueAppend(ctx, r.id, lock, after, key)
		return err
	})
	if err == nil && ok {
		r.broadcastGap(msg)
		r.Broadcast(FrameOf(msg))
	}
	r.appendMu.Unlock()
	if err != nil {
		r.m.log.ErrorContext(ctx, "send a queued prompt", "session_id", r.id, "err", err)
		r.Broadcast(ErrorFrame("could not send the first queued prompt: it stays queued"))
		r.setQueueLenLocked(0, false)
		return
	}
	r.queueChangedLocked(ctx)
	if !ok {
		return
	}
	if lock {
		r.mu.Lock()
		r.providerLocked = true
		r.mu.Unlock()
		r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
	}
	if perr != nil {
		r.Broadcast(ErrorFrame(perr.Error()))
		r.storeNotice(ctx, perr.Error(), msg.Line)
		return
	}
	r.sendTurn(ctx, prov, msg.Line, q.Content, q.Images)
}

// sendTurn hands a stored prompt to the agent.
func (r *Room) sendTurn(ctx context.Context, prov agent.Provider, line int64, content string, images []Image) {
	turn := agent.Turn{Text: content}
	for _, im := range images {
		turn.Images = append(turn.Images, agent.Image{MediaType: im.Source.MediaType, Data: im.Source.Data})
	}
	r.mu.Lock()
	pr := &prompt{id: turnID(r.id, line), line: line, text: content, cwd: r.cwd, model: r.model}
	r.mu.Unlock()
	r.promptSent(pr)
	r.setRunning(true)
	if err := prov.Send(ctx, turn); err != nil {
		r.promptFailed(pr)
		r.setRunning(false)
		r.Broadcast(ErrorFrame(sendError(err)))
		r.storeNotice(ctx, sendError(err), line)
	}
}

// CancelQueued is cancel_queued: the prompt leaves the queue unsent.
func (r *Room) CancelQueued(ctx context.Context, sender Sink, queueID string) {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	ok, err := r.m.cfg.Store.CancelQueued(ctx, r.id, queueID)
	if err != nil {
		r.m.log.ErrorContext(ctx, "cancel a queued prompt", "session_id", r.id, "err", err)
		sender.Send(ErrorFrame("cancel_queued: could not cancel the prompt"))
		return
	}
	if !ok {
		sender.Send(ErrorFrame(fmt.Sprintf("cancel_queued: %q is not queued (sent or cancelled already)", queueID)))
		return
	}
	r.queueChangedLocked(ctx)
}

// SendNow is send_now: the prompt moves to the front of the queue and the
// running turn is stopped (`stopped` to every socket); the prompt goes
// when that turn has ended, at once when none runs.
func (r *Room) SendNow(ctx context.Context, sender Sink, queueID string) {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	ok, err := r.m.cfg.Store.FrontQueued(ctx, r.id, queueID)
	if err != nil {
		r.m.log.ErrorContext(ctx, "move a queued prompt", "session_id", r.id, "err", err)
		sender.Send(ErrorFrame("send_now: could not move the prompt"))
		return
	}
	if !ok {
		sender.Send(ErrorFrame(fmt.Sprintf("send_now: %q is not queued (sent or cancelled already)", queueID)))
		return
	}
	r.queueChangedLocked(ctx)
	if !r.isRunning() {
		r.sendFirstLocked(ctx)
		return
	}
	// The turn's end sends it (kickQueue waits for promptMu, so no other
	// prompt can go first).
	if _, err := r.Stop(ctx); err != nil {
		sender.Send(ErrorFrame("send_now: stop: " + err.Error()))
	}
}
