package server

import (
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/gateway/internal/connlimit"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
	"github.com/svc-code/svc-code/services/gateway/internal/throttle"
)

const maxPasswordLen = 1024

type loginView struct {
	Next   string
	Error  string
	Notice string
}

// Notices of the sign-in page after a sign-out (?signed_out=).
const (
	signedOutNotice        = "You are signed out. A copy of this browser's cookie no longer works."
	signedOutPendingNotice = "You are signed out in this browser, and this server refuses its cookie. The sign-out could not be recorded in Redis yet: the other gateway instances refuse the cookie once Redis answers again."
)

func (s *Server) renderLogin(c *fiber.Ctx, status int, v loginView) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.login.Execute(c.Response().BodyWriter(), v)
}

// loginPage is a plain HTML form: it works without JavaScript.
func (s *Server) loginPage(c *fiber.Ctx) error {
	v := loginView{Next: safeNext(c.Query("next"))}
	switch c.Query("error") {
	case "":
	case "throttled":
		v.Error = "Too many attempts. Wait a little and try again."
	default:
		v.Error = "Wrong password."
	}
	switch c.Query("signed_out") {
	case "":
	case "pending":
		v.Notice = signedOutPendingNotice
	default:
		v.Notice = signedOutNotice
	}
	return s.renderLogin(c, fiber.StatusOK, v)
}

// loginSubmit checks the password, sent as JSON {"password"} or as the
// login form. In this order: a cross-site post is refused (403) before
// anything else, so no web page can sign the user in or spend their
// attempts; the body is parsed; the attempt is counted for its client
// (throttle.Limiter: one at a time, waits after failures) before the slow
// check runs.
func (s *Server) loginSubmit(c *fiber.Ctx) error {
	if !s.loginOriginAllowed(c) {
		return &protocol.Error{Code: protocol.CodeOriginForbidden, Message: "a login must be posted from this server's own page"}
	}
	form := isForm(c)
	var password, next string
	switch {
	case form:
		password, next = c.FormValue("password"), safeNext(c.FormValue("next"))
	default:
		var body struct {
			Password *string `json:"password"`
		}
		if err := svchttp.DecodeJSON(c, &body); err != nil {
			return err
		}
		if body.Password == nil {
			return protocol.Errorf(protocol.CodeBadRequest, "the body must be {\"password\": \"...\"}")
		}
		password = *body.Password
	}
	if password == "" || len(password) > maxPasswordLen {
		if form {
			return s.renderLogin(c, fiber.StatusBadRequest, loginView{Next: next, Error: "Enter the password."})
		}
		return protocol.Errorf(protocol.CodeBadRequest, "password must be 1 to %d bytes", maxPasswordLen)
	}

	client := view(c).Client
	key := clientKey(client)
	if refusal, wait := s.d.Limiter.Begin(key); refusal != throttle.Allowed {
		if refusal == throttle.Waiting {
			s.d.Log.Warn("login_throttled", "client", client.String(), "wait", wait.String())
		}
		return s.throttled(c, form, next, wait)
	}
	s.verify <- struct{}{}
	ok, err := s.d.Store.CheckPassword(password)
	<-s.verify
	s.d.Limiter.Finish(key, ok && err == nil)
	if err != nil {
		return err
	}
	if !ok {
		s.d.Log.Warn("login_failed", "client", client.String())
		if form {
			return s.renderLogin(c, fiber.StatusUnauthorized, loginView{Next: next, Error: "Wrong password."})
		}
		return &protocol.Error{Code: protocol.CodeInvalidPassword, Message: "wrong password"}
	}
	value, ttl, err := s.d.Store.IssueCookie()
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{
		Name:     proxy.CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   int(ttl / time.Second),
		Expires:  time.Now().Add(ttl),
		HTTPOnly: true,
		Secure:   view(c).Scheme == "https",
		SameSite: fiber.CookieSameSiteLaxMode,
	})
	s.d.Log.Info("login_succeeded", "client", client.String())
	if form {
		return c.Redirect(next, fiber.StatusSeeOther)
	}
	return c.JSON(fiber.Map{"ok": true})
}

// loginOriginAllowed applies the Origin gate to a login post. A browser
// always sends Origin (or at least Sec-Fetch-Site) with a POST, so a
// request with neither comes from a program (curl, a script), which no web
// page can drive; it passes. Anything a browser sends must pass the gate.
func (s *Server) loginOriginAllowed(c *fiber.Ctx) bool {
	if c.Get(fiber.HeaderOrigin) == "" && c.Get("Sec-Fetch-Site") == "" {
		return true
	}
	return s.originAllowed(c)
}

// clientKey is the throttle's key for a client address: connlimit.Key's
// (IPv4 address, IPv6 /64, every loopback address as one).
func clientKey(a netip.Addr) string {
	if k, ok := connlimit.Key(a); ok {
		return k.String()
	}
	return a.String()
}

func (s *Server) throttled(c *fiber.Ctx, form bool, next string, wait time.Duration) error {
	c.Set(fiber.HeaderRetryAfter, retryAfter(wait))
	if form {
		return s.renderLogin(c, fiber.StatusTooManyRequests, loginView{Next: next, Error: "Too many attempts. Try again in " + retryAfter(wait) + " s."})
	}
	return &protocol.Error{Code: protocol.CodeTooManyAttempts, Message: "too many failed attempts; retry after " + retryAfter(wait) + " s"}
}

// logout signs the request's cookie out and clears it. It needs no
// credential, so a browser with a stale cookie can always get rid of it; a
// cookie that verifies is revoked on every instance for the rest of its
// life (credential.Store.SignOut), anything else records nothing. When
// Redis cannot be written, the cookie is still cleared and refused here,
// the record is retried, and the JSON answer says so.
func (s *Server) logout(c *fiber.Ctx) error {
	outcome := credential.SignOutNone
	if v := c.Cookies(proxy.CookieName); v != "" {
		var err error
		outcome, err = s.d.Store.SignOut(c.UserContext(), v)
		if err != nil {
			s.d.Log.Warn("signed_out_cookie_not_in_redis", "err", err, "request_id", requestID(c))
		}
		if outcome != credential.SignOutNone {
			s.d.Log.Info("cookie_signed_out", "outcome", string(outcome), "client", view(c).Client.String())
		}
	}
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
	if isForm(c) || strings.Contains(c.Get(fiber.HeaderAccept), "text/html") && !isJSON(c) {
		if outcome == credential.SignOutPending {
			return c.Redirect("/login?signed_out=pending", fiber.StatusSeeOther)
		}
		return c.Redirect("/login?signed_out=1", fiber.StatusSeeOther)
	}
	answer := fiber.Map{"ok": true, "revoked": outcome == credential.SignOutRecorded}
	if outcome == credential.SignOutPending {
		answer["pending"] = true
		answer["message"] = "the cookie is cleared and this server refuses it; Redis could not be reached, so the other gateway instances refuse it once Redis answers again (retried every sync)"
	}
	return c.JSON(answer)
}

// revoke bumps the epoch of one scope: browsers (every svc_auth cookie) or
// scripts (every API token, Bearer and tkn, the caller's included).
func (s *Server) revoke(c *fiber.Ctx) error {
	var body struct {
		Scope *string `json:"scope"`
	}
	if err := svchttp.DecodeJSON(c, &body); err != nil {
		return err
	}
	if body.Scope == nil {
		return protocol.Errorf(protocol.CodeBadRequest, "the body must be {\"scope\": \"browsers\" | \"scripts\"}")
	}
	scope := credential.Scope(*body.Scope)
	if scope != credential.ScopeBrowsers && scope != credential.ScopeScripts {
		return protocol.Errorf(protocol.CodeBadRequest, "unknown scope %q: use \"browsers\" or \"scripts\"", *body.Scope)
	}
	e, err := s.d.Store.Revoke(c.UserContext(), scope)
	if err != nil {
		return err
	}
	id, _ := c.Locals(localIdentity).(credential.Identity)
	s.d.Log.Info("credentials_revoked", "scope", string(scope), "by", string(id.Kind), "cookie_epoch", e.Cookie, "bearer_epoch", e.Bearer)
	answer := fiber.Map{"ok": true, "scope": string(scope), "cookie_epoch": e.Cookie, "bearer_epoch": e.Bearer}
	if scope == credential.ScopeScripts {
		// The browser cannot read the config file: the new token is shown
		// to the caller this once, as after a password change. The caller
		// holds a credential that may call every route already.
		answer["api_token"] = s.d.Store.APIToken()
	}
	return c.JSON(answer)
}
