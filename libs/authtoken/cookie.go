package authtoken

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const cookieIssuer = "svc-code"

// CookieClaims is what the svc_auth cookie carries: the cookie epoch it was
// issued under, plus the registered issue and expiry times and a random id
// (jti) that names this one cookie, so that signing out can revoke it.
type CookieClaims struct {
	Epoch int64 `json:"ce"`
	jwt.RegisteredClaims
}

// SignCookie issues a cookie value (an HS256 JWT) for the cookie epoch,
// valid for ttl from now.
func SignCookie(secret []byte, epoch int64, now time.Time, ttl time.Duration) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("sign cookie: %w", err)
	}
	c := CookieClaims{
		Epoch: epoch,
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        base64.RawURLEncoding.EncodeToString(id[:]),
			Issuer:    cookieIssuer,
			Subject:   "browser",
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("sign cookie: %w", err)
	}
	return s, nil
}

// Cookie is what a verified cookie tells: the id that names it and when it
// expires.
type Cookie struct {
	// ID is the cookie's jti. A cookie issued before cookies carried one
	// is named by its signature instead: "sig:" and the hex of the first
	// 16 bytes of the SHA-256 of the decoded signature (the decoded bytes,
	// not the text, so that another base64 spelling of the same signature
	// has the same name). Either is unique to one issued cookie, and only
	// a cookie whose signature verifies gets a name.
	ID      string
	Expires time.Time
}

// CheckCookie verifies a cookie value: signature (HS256 only), issuer,
// expiry and cookie epoch.
func CheckCookie(secret []byte, epoch int64, value string, now time.Time) error {
	_, err := VerifyCookie(secret, epoch, value, now)
	return err
}

// VerifyCookie verifies a cookie value as CheckCookie does and returns its
// id and expiry.
func VerifyCookie(secret []byte, epoch int64, value string, now time.Time) (Cookie, error) {
	if len(value) > 4096 {
		return Cookie{}, ErrMalformed
	}
	var c CookieClaims
	tok, err := jwt.ParseWithClaims(value, &c, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(cookieIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenMalformed):
		return Cookie{}, ErrMalformed
	default:
		return Cookie{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Epoch != epoch {
		return Cookie{}, ErrStale
	}
	id := c.ID
	if id == "" {
		sum := sha256.Sum256(tok.Signature)
		id = "sig:" + hex.EncodeToString(sum[:16])
	}
	return Cookie{ID: id, Expires: c.ExpiresAt.Time}, nil
}
