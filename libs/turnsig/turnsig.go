// Package turnsig signs the entries of chat's turn stream (<prefix>turns,
// docs/api.md "Turn events"), so that shadow (which commits a journal of the
// turn's directory) and analytics (which records the turn and its cost) act
// only on events chat wrote, not on whatever anyone able to write to Redis
// adds. An entry carries the field "sig": the hex HMAC-SHA256, under a key
// derived from the internal secret (internalauth.Secret.Derive("turns v1")),
// of the stream's name and every other field and value, sorted by field,
// each preceded by its length. The values are signed as Redis stores them,
// so a signature made on the values given to XADD verifies on the strings
// XREADGROUP returns.
package turnsig

import (
	"crypto/hmac"
	"fmt"
	"slices"
	"strconv"

	"github.com/svc-code/svc-code/libs/internalauth"
)

// Field is the entry's field that holds the signature.
const Field = "sig"

// KeyPurpose is what the key is derived for from the internal secret.
const KeyPurpose = "turns v1"

// Key signs and verifies the entries of one deployment.
type Key struct{ key []byte }

// New derives the key from secret; an unset secret signs nothing and
// verifies nothing.
func New(secret internalauth.Secret) Key { return Key{key: secret.Derive(KeyPurpose)} }

// Sign sets values[Field] to the signature of values for stream. Values
// must be strings, byte slices or integers (what chat writes).
func (k Key) Sign(stream string, values map[string]any) error {
	if k.key == nil {
		return fmt.Errorf("sign turn event: no internal secret")
	}
	delete(values, Field)
	mac, err := k.mac(stream, values)
	if err != nil {
		return err
	}
	values[Field] = mac
	return nil
}

// Verify reports whether values (an entry read from stream) carry a valid
// signature.
func (k Key) Verify(stream string, values map[string]any) bool {
	got, ok := values[Field].(string)
	if k.key == nil || !ok {
		return false
	}
	want, err := k.mac(stream, values)
	return err == nil && hmac.Equal([]byte(got), []byte(want))
}

func (k Key) mac(stream string, values map[string]any) (string, error) {
	fields := make([]string, 0, len(values))
	for f := range values {
		if f != Field {
			fields = append(fields, f)
		}
	}
	slices.Sort(fields)
	parts := make([]string, 0, 1+2*len(fields))
	parts = append(parts, stream)
	for _, f := range fields {
		v, err := text(values[f])
		if err != nil {
			return "", fmt.Errorf("turn event field %s: %w", f, err)
		}
		parts = append(parts, f, v)
	}
	return internalauth.FieldsMAC(k.key, parts...), nil
}

// text is v as Redis stores it.
func text(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	default:
		return "", fmt.Errorf("cannot sign a %T", v)
	}
}

// Valid reports whether k was derived from a secret (and so signs).
func (k Key) Valid() bool { return k.key != nil }
