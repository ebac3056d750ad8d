package authtoken

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const cookieIssuer = "svc-code"

// CookieClaims is what the svc_auth cookie carries: the cookie epoch it was
// issued under, plus the registered issue and expiry times.
type CookieClaims struct {
	Epoch int64 `json:"ce"`
	jwt.RegisteredClaims
}

// SignCookie issues a cookie value (an HS256 JWT) for the cookie epoch,
// valid for ttl from now.
func SignCookie(secret []byte, epoch int64, now time.Time, ttl time.Duration) (string, error) {
	c := CookieClaims{
		Epoch: epoch,
		RegisteredClaims: jwt.RegisteredClaims{
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

// CheckCookie verifies a cookie value: signature (HS256 only), issuer,
// expiry and cookie epoch.
func CheckCookie(secret []byte, epoch int64, value string, now time.Time) error {
	if len(value) > 4096 {
		return ErrMalformed
	}
	var c CookieClaims
	_, err := jwt.ParseWithClaims(value, &c, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(cookieIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ErrMalformed
	default:
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Epoch != epoch {
		return ErrStale
	}
	return nil
}
