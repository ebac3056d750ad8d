package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Limits of a subscription.
const (
	MaxSubscriptions = 50
	MaxName          = 80 // characters
	MaxEndpoint      = 2048
	MaxUserAgent     = 256
)

// ErrNotFound is the error of a subscription id that is not stored.
var ErrNotFound = errors.New("no such subscription")

// errTooMany: MaxSubscriptions are registered already.
var errTooMany = errors.New("too many subscriptions")

// Sub is a stored subscription.
type Sub struct {
	ID, Name, Endpoint, P256dh, Auth, UserAgent string
	CreatedAt                                   time.Time
	LastSuccessAt                               *time.Time
	LastError                                   *string
}

// Listed is s as the routes answer it: the endpoint's origin only.
func (s Sub) Listed() protocol.PushSubscription {
	return protocol.PushSubscription{
		ID: s.ID, Name: s.Name, EndpointOrigin: origin(s.Endpoint), CreatedAt: s.CreatedAt.UTC(),
		LastSuccessAt: s.LastSuccessAt, LastError: s.LastError, UserAgent: s.UserAgent,
	}
}

func origin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Subs keeps the subscriptions in PostgreSQL (push_subscriptions).
type Subs struct{ DB *pgxpool.Pool }

const subColumns = `id, name, endpoint, p256dh, auth, user_agent, created_at, last_success_at, last_error`

func scanSub(row pgx.Row) (Sub, error) {
	var s Sub
	err := row.Scan(&s.ID, &s.Name, &s.Endpoint, &s.P256dh, &s.Auth, &s.UserAgent, &s.CreatedAt, &s.LastSuccessAt, &s.LastError)
	return s, err
}

// List returns every subscription, oldest first.
func (d Subs) List(ctx context.Context) ([]Sub, error) {
	rows, err := d.DB.Query(ctx, `SELECT `+subColumns+` FROM push_subscriptions ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list push subscriptions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Sub, error) { return scanSub(r) })
	if err != nil {
		return nil, fmt.Errorf("list push subscriptions: %w", err)
	}
	return subs, nil
}

// Get returns the subscription id.
func (d Subs) Get(ctx context.Context, id string) (Sub, error) {
	s, err := scanSub(d.DB.QueryRow(ctx, `SELECT `+subColumns+` FROM push_subscriptions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Sub{}, ErrNotFound
	}
	return s, err
}

// Put stores s (already validated): a new endpoint gets a new row
// (created true), a known one is replaced, keeping its id. A new one past
// MaxSubscriptions is refused with errTooMany.
func (d Subs) Put(ctx context.Context, s Sub) (out Sub, created bool, err error) {
	err = pgx.BeginFunc(ctx, d.DB, func(tx pgx.Tx) error {
		// One writer at a time, so that the count check holds.
		if _, err := tx.Exec(ctx, `LOCK TABLE push_subscriptions IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		out, err = scanSub(tx.QueryRow(ctx, `UPDATE push_subscriptions SET name = $2, p256dh = $3, auth = $4,
			user_agent = $5, last_error = NULL WHERE endpoint = $1 RETURNING `+subColumns,
			s.Endpoint, s.Name, s.P256dh, s.Auth, s.UserAgent))
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM push_subscriptions`).Scan(&n); err != nil {
			return err
		}
		if n >= MaxSubscriptions {
			return errTooMany
		}
		created = true
		out, err = scanSub(tx.QueryRow(ctx, `INSERT INTO push_subscriptions (id, name, endpoint, p256dh, auth, user_agent)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+subColumns,
			newID(), s.Name, s.Endpoint, s.P256dh, s.Auth, s.UserAgent))
		return err
	})
	if err != nil && !errors.Is(err, errTooMany) {
		err = fmt.Errorf("store push subscription: %w", err)
	}
	return out, created, err
}

// Delete removes the subscription id.
func (d Subs) Delete(ctx context.Context, id string) error {
	tag, err := d.DB.Exec(ctx, `DELETE FROM push_subscriptions WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete push subscription: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteEndpoint removes the subscription of endpoint (the push service
// said it is gone), if it is still that one.
func (d Subs) DeleteEndpoint(ctx context.Context, id, endpoint string) error {
	_, err := d.DB.Exec(ctx, `DELETE FROM push_subscriptions WHERE id = $1 AND endpoint = $2`, id, endpoint)
	return err
}

// Delivered records the outcome of a push to id: errText "" is a success.
func (d Subs) Delivered(ctx context.Context, id, errText string) error {
	var err error
	if errText == "" {
		_, err = d.DB.Exec(ctx, `UPDATE push_subscriptions SET last_success_at = now(), last_error = NULL WHERE id = $1`, id)
	} else {
		_, err = d.DB.Exec(ctx, `UPDATE push_subscriptions SET last_error = $2 WHERE id = $1`, id, errText)
	}
	return err
}

func newID() string { return "ps_" + strings.ToLower(rand.Text()[:16]) }

// Validate checks a subscribe request and returns the Sub to store; the
// errors are bad_request envelopes.
func Validate(req protocol.PushSubscribeRequest, userAgent string) (Sub, error) {
	bad := func(format string, args ...any) (Sub, error) {
		return Sub{}, protocol.Errorf(protocol.CodeBadRequest, format, args...)
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxName {
		return bad("name: 1 to %d characters", MaxName)
	}
	for _, c := range name {
		if unicode.IsControl(c) {
			return bad("name: no control characters")
		}
	}
	ep := req.Subscription.Endpoint
	if err := checkEndpoint(ep); err != nil {
		return bad("subscription.endpoint: %v", err)
	}
	p256dh, err := b64(req.Subscription.Keys.P256dh)
	if err != nil || len(p256dh) != 65 {
		return bad("subscription.keys.p256dh: want a base64url uncompressed P-256 point (65 bytes)")
	}
	if _, err := ecdh.P256().NewPublicKey(p256dh); err != nil {
		return bad("subscription.keys.p256dh: not a point of P-256")
	}
	auth, err := b64(req.Subscription.Keys.Auth)
	if err != nil || len(auth) != 16 {
		return bad("subscription.keys.auth: want 16 bytes, base64url")
	}
	ua := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(userAgent, ""))
	if len(ua) > MaxUserAgent {
		ua = ua[:MaxUserAgent]
		for !utf8.ValidString(ua) {
			ua = ua[:len(ua)-1]
		}
	}
	return Sub{
		Name: name, Endpoint: ep, UserAgent: ua,
		P256dh: base64.RawURLEncoding.EncodeToString(p256dh), Auth: base64.RawURLEncoding.EncodeToString(auth),
	}, nil
}

// checkEndpoint allows https URLs, and http ones to a loopback host only
// (tests, a push service on this machine); never credentials or a
// fragment.
func checkEndpoint(ep string) error {
	if ep == "" || len(ep) > MaxEndpoint {
		return fmt.Errorf("want an https URL of at most %d bytes", MaxEndpoint)
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return errors.New("want an absolute https URL without credentials or fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return errors.New("http is allowed for loopback hosts only: want https")
		}
	default:
		return fmt.Errorf("scheme %q: want https", u.Scheme)
	}
	for _, c := range ep {
		if c <= ' ' || c == 0x7f {
			return errors.New("no spaces or control characters")
		}
	}
	return nil
}

// b64 decodes base64url, padded or not (browsers give it unpadded).
func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
