package push

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// An answer token (POST /api/push/answer) is the credential of one
// permission request: it names the session, the request and a digest of
// the request's tool and input, and is sealed with a key derived from the
// internal secret, so that it cannot be made up nor edited to name another
// request, and needs nothing stored to be checked. Its single use is
// enforced in Redis (SET NX on its nonce, kept until it expires); it is
// good only while its request is pending (the owner checks that, and the
// digest, when it answers).

// TokenKeyPurpose derives the tokens' key from the internal secret.
const TokenKeyPurpose = "chat push answer token v1"

// maxTokenLen bounds what is decoded of a presented token.
const maxTokenLen = 1024

type tokenClaims struct {
	Session string `json:"s"`
	Request string `json:"r"`
	Digest  string `json:"d"`
	Nonce   string `json:"n"`
	Expires int64  `json:"e"` // unix seconds
}

// errBadToken: not a token of ours (made up, edited, sealed by another
// key, or expired).
var errBadToken = errors.New("not a valid answer token")

type tokens struct{ key []byte }

func newTokens(key []byte) tokens {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return tokens{key: key}
}

func (t tokens) issue(session, request, digest string, expires time.Time) string {
	c := tokenClaims{Session: session, Request: request, Digest: digest, Nonce: rand.Text(), Expires: expires.Unix()}
	b, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(t.mac(body))
}

func (t tokens) mac(body string) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

func (t tokens) open(token string, now time.Time) (tokenClaims, error) {
	if len(token) > maxTokenLen {
		return tokenClaims{}, errBadToken
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return tokenClaims{}, errBadToken
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(got, t.mac(body)) {
		return tokenClaims{}, errBadToken
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return tokenClaims{}, errBadToken
	}
	var c tokenClaims
	if err := json.Unmarshal(b, &c); err != nil || c.Session == "" || c.Request == "" || c.Nonce == "" {
		return tokenClaims{}, errBadToken
	}
	if now.Unix() >= c.Expires {
		return tokenClaims{}, errBadToken
	}
	return c, nil
}
