// Package authtoken holds svc-code's credential primitives: the slow
// password hash, the API token derived from the password and bound to the
// bearer epoch, and the signed browser cookie bound to the cookie epoch.
// It knows nothing of HTTP; the gateway decides where each credential is
// accepted.
package authtoken

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost settings.
type HashParams struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultParams costs roughly a tenth of a second on a laptop core: slow
// enough to make guessing offline expensive, fast enough for a login.
var DefaultParams = HashParams{Time: 2, MemoryKiB: 64 * 1024, Threads: 2}

const saltLen = 16

var b64 = base64.RawStdEncoding

// HashPassword returns an argon2id hash in the PHC string format
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
func HashPassword(password string, p HashParams) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// maxMemoryKiB bounds what a (hand-edited or hostile) hash may ask for.
const maxMemoryKiB = 1 << 20

// VerifyPassword reports whether password matches the encoded hash. A hash
// that cannot be parsed is an error, never a match.
func VerifyPassword(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errors.New("password hash: not an argon2id PHC string")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("password hash: unsupported argon2 version")
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil {
		return false, errors.New("password hash: bad parameters")
	}
	if p.Time == 0 || p.Threads == 0 || p.MemoryKiB == 0 || p.MemoryKiB > maxMemoryKiB || p.Time > 64 {
		return false, errors.New("password hash: parameters out of range")
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, errors.New("password hash: bad salt")
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 || len(want) > 64 {
		return false, errors.New("password hash: bad digest")
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want))) //nolint:gosec // 16..64, checked above
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// DeriveTokenKey derives the key API tokens are computed from. It runs the
// password through argon2id with a fresh salt, so the key (and every token
// made from it) reveals nothing usable about the password, and a new
// password always yields a new key.
func DeriveTokenKey(password string, p HashParams) ([]byte, error) {
	if password == "" {
		return nil, errors.New("empty password")
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("token key salt: %w", err)
	}
	return argon2.IDKey([]byte("svc-code api token key\x00"+password), salt, p.Time, p.MemoryKiB, p.Threads, 32), nil
}

// NewSecret returns n random bytes (n ≥ 32 recommended).
func NewSecret(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("random secret: %w", err)
	}
	return b, nil
}

// GeneratePassword returns a random password of 24 characters from an
// alphabet without look-alikes, grouped for reading aloud (xxxx-xxxx-...).
func GeneratePassword() (string, error) {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	var sb strings.Builder
	for i, b := range raw {
		if i > 0 && i%4 == 0 {
			sb.WriteByte('-')
		}
		// 256 is not a multiple of 31; the bias is below 1% per character
		// and irrelevant at 24 characters of entropy ~118 bits.
		sb.WriteByte(alphabet[int(b)%len(alphabet)])
	}
	return sb.String(), nil
}
