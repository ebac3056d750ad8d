package authtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Errors a credential check reports. Callers answer all of them with the
// same 401; the distinction is for logs and tests.
var (
	ErrMalformed = errors.New("credential is malformed")
	ErrStale     = errors.New("credential belongs to a revoked epoch")
	ErrInvalid   = errors.New("credential signature does not match")
)

// TokenPrefix starts every API token, so a token is recognisable in a
// leaked log and can never be mistaken for a cookie or a password.
const TokenPrefix = "svct_"

// APIToken returns the API token for key and bearer epoch:
// "svct_<epoch>_<mac>", where mac is an HMAC-SHA256 of the epoch under the
// key. Bumping the epoch makes every older token stale.
func APIToken(key []byte, epoch int64) string {
	return TokenPrefix + strconv.FormatInt(epoch, 10) + "_" + tokenMAC(key, epoch)
}

func tokenMAC(key []byte, epoch int64) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("svc-code api token\x00"))
	m.Write([]byte(strconv.FormatInt(epoch, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ParseAPIToken returns the epoch a token claims, or ErrMalformed.
func ParseAPIToken(tok string) (epoch int64, mac string, err error) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok || len(tok) > 128 {
		return 0, "", ErrMalformed
	}
	ep, mac, ok := strings.Cut(rest, "_")
	if !ok || len(mac) != 43 || ep == "" || (len(ep) > 1 && ep[0] == '0') {
		return 0, "", ErrMalformed
	}
	epoch, err = strconv.ParseInt(ep, 10, 64)
	if err != nil || epoch < 0 {
		return 0, "", ErrMalformed
	}
	return epoch, mac, nil
}

// CheckAPIToken verifies tok against key and the current bearer epoch in
// constant time with respect to the secret parts.
func CheckAPIToken(key []byte, epoch int64, tok string) error {
	claimed, mac, err := ParseAPIToken(tok)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(mac), []byte(tokenMAC(key, claimed))) {
		return ErrInvalid
	}
	if claimed != epoch {
		return ErrStale
	}
	return nil
}
