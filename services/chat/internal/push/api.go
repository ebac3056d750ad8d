package push

import (
	"context"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Register adds the /api/push routes to app.
func Register(app *fiber.App, s *Service) {
	h := handlers{s}
	app.Get("/api/push/key", h.key)
	app.Get("/api/push/subscriptions", h.list)
	app.Post("/api/push/subscriptions", h.subscribe)
	app.Delete("/api/push/subscriptions/:id", h.unsubscribe)
	app.Post("/api/push/test", h.test)
	app.Post("/api/push/answer", h.answer)
	app.Get("/api/push/pending", h.pending)
}

type handlers struct{ s *Service }

func (h handlers) key(c *fiber.Ctx) error {
	return c.JSON(protocol.PushKey{PublicKey: h.s.cfg.Keys.Public})
}

func (h handlers) list(c *fiber.Ctx) error {
	subs, err := h.s.cfg.Subs.List(c.UserContext())
	if err != nil {
		return err
	}
	out := protocol.PushSubscriptionList{Subscriptions: make([]protocol.PushSubscription, len(subs))}
	for i, s := range subs {
		out.Subscriptions[i] = s.Listed()
	}
	return c.JSON(out)
}

func (h handlers) subscribe(c *fiber.Ctx) error {
	var req protocol.PushSubscribeRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	sub, err := Validate(req, c.Get(fiber.HeaderUserAgent))
	if err != nil {
		return err
	}
	out, created, err := h.s.cfg.Subs.Put(c.UserContext(), sub)
	if errors.Is(err, errTooMany) {
		return protocol.Errorf(protocol.CodeBadRequest, "at most %d subscriptions: remove one first", MaxSubscriptions)
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.Status(status).JSON(fiber.Map{"subscription": out.Listed()})
}

func (h handlers) unsubscribe(c *fiber.Ctx) error {
	id := string([]byte(c.Params("id")))
	if err := h.s.cfg.Subs.Delete(c.UserContext(), id); errors.Is(err, ErrNotFound) {
		return protocol.Errorf(protocol.CodeNotFound, "no push subscription %q", id)
	} else if err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func (h handlers) test(c *fiber.Ctx) error {
	var req protocol.PushTestRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.ID == "" {
		return protocol.Errorf(protocol.CodeBadRequest, "id is required")
	}
	if _, err := h.s.cfg.Subs.Get(c.UserContext(), req.ID); errors.Is(err, ErrNotFound) {
		return protocol.Errorf(protocol.CodeNotFound, "no push subscription %q", req.ID)
	} else if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.s.cfg.TestWait)
	defer cancel()
	res, done, err := h.s.Test(ctx, req.ID)
	switch {
	case errors.Is(err, ErrBusy):
		return protocol.Errorf(protocol.CodeUnavailable, "the test push could not be queued (the push queue is full or stopping): try again")
	case err != nil:
		return err
	case !done:
		return c.Status(http.StatusAccepted).JSON(protocol.PushTestQueued{Queued: true})
	}
	return c.JSON(res)
}

// answer: POST /api/push/answer, reachable without a credential (the
// token is the credential).
func (h handlers) answer(c *fiber.Ctx) error {
	var req protocol.PushAnswerRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Token == "" || (req.Decision != string(agent.Allow) && req.Decision != string(agent.Deny)) {
		return protocol.Errorf(protocol.CodeBadRequest, `token and decision ("allow" or "deny") are required`)
	}
	sid, rid, err := h.s.Answer(c.UserContext(), req.Token, agent.Behavior(req.Decision))
	switch {
	case errors.Is(err, ErrForbidden):
		return protocol.Errorf(protocol.CodeForbidden, "this answer token is not valid (unknown, expired or already used)")
	case errors.Is(err, ErrGone):
		return protocol.Errorf(protocol.CodeGone, "the permission request was already answered or has ended")
	case err != nil:
		return err
	}
	return c.JSON(protocol.PushAnswer{SessionID: sid, RequestID: rid, Decision: req.Decision})
}

func (h handlers) pending(c *fiber.Ctx) error {
	n, err := h.s.cfg.Runtime.PendingCount(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(protocol.PushPending{Count: n})
}
