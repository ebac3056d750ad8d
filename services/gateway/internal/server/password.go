package server

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
	"github.com/svc-code/svc-code/services/gateway/internal/throttle"
)

// changePassword is POST /api/auth/password: the browser's `make passwd`.
// It runs behind authenticate, so it needs a credential (and a cookie or
// tkn passes the Origin gate: a cross-site post never gets here), and it
// needs the current password on top: a stolen cookie or token alone cannot
// take the account over. The password check is throttled with the login's
// limiter, per client, so this route is no faster a way to guess than the
// login. The new password follows passwd's rules. Then both keys change
// (every cookie and token is void, on every instance), this browser's
// cookie is cleared too, and the answer carries the new API token: the
// one time it is shown.
func (s *Server) changePassword(c *fiber.Ctx) error {
	var body struct {
		Current *string `json:"current_password"`
		New     *string `json:"new_password"`
	}
	if err := svchttp.DecodeJSON(c, &body); err != nil {
		return err
	}
	if body.Current == nil || body.New == nil {
		return protocol.Errorf(protocol.CodeBadRequest, "the body must be {\"current_password\": \"...\", \"new_password\": \"...\"}")
	}
	if *body.Current == "" || len(*body.Current) > maxPasswordLen {
		return protocol.Errorf(protocol.CodeBadRequest, "current_password must be 1 to %d bytes", maxPasswordLen)
	}
	if err := credential.CheckNewPassword(*body.New); err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "new_password: %v", err)
	}

	client := view(c).Client
	key := clientKey(client)
	if refusal, wait := s.d.Limiter.Begin(key); refusal != throttle.Allowed {
		if refusal == throttle.Waiting {
			s.d.Log.Warn("password_change_throttled", "client", client.String(), "wait", wait.String())
		}
		c.Set(fiber.HeaderRetryAfter, retryAfter(wait))
		return &protocol.Error{Code: protocol.CodeTooManyAttempts, Message: "too many failed attempts; retry after " + retryAfter(wait) + " s"}
	}
	s.verify <- struct{}{}
	ok, err := s.d.Store.CheckPassword(*body.Current)
	<-s.verify
	s.d.Limiter.Finish(key, ok && err == nil)
	if err != nil {
		return err
	}
	if !ok {
		s.d.Log.Warn("password_change_refused", "client", client.String(), "reason", "wrong current password")
		// 403, not 401: the request's credential is good (a 401 would
		// read as "signed out"); the password it offers is not.
		return &protocol.Error{Code: protocol.CodeInvalidPassword, Message: "the current password is wrong; nothing changed", Status: fiber.StatusForbidden}
	}
	token, err := s.d.Store.ChangePassword(c.UserContext(), *body.New)
	if err != nil {
		return err
	}
	if s.d.PasswordChanged != nil {
		s.d.PasswordChanged()
	}
	id, _ := c.Locals(localIdentity).(credential.Identity)
	s.d.Log.Info("password_changed", "client", client.String(), "by", string(id.Kind))
	c.Cookie(&fiber.Cookie{
		Name:     proxy.CookieName,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		Expires:  time.Unix(0, 0),
		HTTPOnly: true,
		Secure:   view(c).Scheme == "https",
		SameSite: fiber.CookieSameSiteLaxMode,
	})
	return c.JSON(fiber.Map{
		"ok":         true,
		"signed_out": "browsers",
		"api_token":  token,
		"message":    "Password changed. Every browser is signed out, this one included: sign in again with the new password. Every API token is void; the new one is api_token (shown here once, and in the api_token line of the config file).",
	})
}
