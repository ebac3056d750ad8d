// Package internalauth is the credential by which backends know a request
// came through the gateway. The gateway adds it to every request it
// forwards (header protocol.HeaderInternal); each backend refuses any
// request without it, so nothing reaches a service around the auth rules.
//
// The secret comes from SVC_INTERNAL_SECRET or SVC_INTERNAL_SECRET_FILE, or,
// when neither is set, from <data home>/internal.key, which the first
// service to start creates (0600). Services on one machine or sharing one
// data volume therefore agree without any setting.
package internalauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/secretpaths"
)

// EnvVar names the variable (and, with _FILE, the file) holding the secret.
const EnvVar = "SVC_INTERNAL_SECRET"

// minLen is the shortest secret accepted from the environment.
const minLen = 16

// Secret is the shared internal credential.
type Secret struct{ value string }

// Load reads the secret from the environment, else from (or into) the key
// file in dataHome.
func Load(r *envconf.Reader, dataHome string) (Secret, error) {
	if v := r.Secret(EnvVar); v != "" {
		if len(v) < minLen {
			return Secret{}, fmt.Errorf("%s must be at least %d characters", EnvVar, minLen)
		}
		return Secret{value: v}, nil
	}
	if err := r.Err(); err != nil {
		return Secret{}, err
	}
	return loadOrCreate(filepath.Join(dataHome, secretpaths.InternalKeyFile))
}

// FromString wraps a known secret (tests, benchmarks).
func FromString(v string) Secret { return Secret{value: v} }

func loadOrCreate(path string) (Secret, error) {
	if s, err := readKey(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Secret{}, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Secret{}, fmt.Errorf("generate internal secret: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".internal-*.tmp")
	if err != nil {
		return Secret{}, fmt.Errorf("create internal secret: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Secret{}, fmt.Errorf("write internal secret: %w", werr)
	}
	// Link fails if another process created the key first; then theirs wins.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return Secret{}, fmt.Errorf("install internal secret %s: %w", path, err)
	}
	return readKey(path)
}

func readKey(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, err
	}
	v := strings.TrimSpace(string(b))
	if len(v) < minLen {
		return Secret{}, fmt.Errorf("internal secret %s is too short; delete it to have a new one made", path)
	}
	return Secret{value: v}, nil
}

// Value is the header value the gateway sends.
func (s Secret) Value() string { return s.value }

// Check reports, in constant time, whether a received header value is the
// secret. An unset secret matches nothing.
func (s Secret) Check(got string) bool {
	if s.value == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.value)) == 1
}

// Derive returns a key for one purpose, HMAC-SHA256(secret, purpose): the
// registries and relays in Redis sign with a derived key, never with the
// secret itself, so a MAC seen in Redis says nothing about the header the
// gateway sends. An unset secret derives nil, which signs nothing.
func (s Secret) Derive(purpose string) []byte {
	if s.value == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(s.value))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// FieldsMAC is the hex HMAC-SHA256 under key (from Derive) of fields, each
// preceded by its length as a uvarint, so that no two lists of fields sign
// alike: how the entries kept in Redis are signed (libs/termhosts,
// libs/turnsig).
func FieldsMAC(key []byte, fields ...string) string {
	m := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}
