package push

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFile is where the VAPID key pair is kept, under the data home.
const KeyFile = "push/vapid.json"

// Keys is the VAPID key pair (RFC 8292) of this data home: every chat
// instance of one data home signs with it, and browsers subscribed with its
// public key accept only pushes it signed.
type Keys struct {
	// Public is the uncompressed P-256 point, base64url without padding
	// (the browser's applicationServerKey).
	Public string `json:"public_key"`
	// Private is the private scalar, base64url without padding.
	Private string `json:"private_key"`
}

// LoadKeys reads the key pair of dataHome, creating it (file 0600 in a
// directory 0700) on first start. Concurrent first starts agree on one
// pair: the file is written aside and linked into place, and whoever loses
// the race reads the winner's.
func LoadKeys(dataHome string) (Keys, error) {
	path := filepath.Join(dataHome, KeyFile)
	if k, err := readKeys(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	k := Keys{
		Public:  base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
		Private: base64.RawURLEncoding.EncodeToString(priv.Bytes()),
	}
	b, err := json.MarshalIndent(k, "", "  ") //nolint:gosec // the key file is written 0600 in a 0700 directory: keeping the private key is its purpose
	if err != nil {
		return Keys{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vapid-*")
	if err != nil {
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return Keys{}, fmt.Errorf("push keys: %w", err)
	}
	return readKeys(path)
}

// readKeys reads and checks a key file.
func readKeys(path string) (Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Keys{}, err
	}
	var k Keys
	if err := json.Unmarshal(b, &k); err != nil {
		return Keys{}, fmt.Errorf("push keys %s: %w", path, err)
	}
	d, err := base64.RawURLEncoding.DecodeString(k.Private)
	if err != nil {
		return Keys{}, fmt.Errorf("push keys %s: private_key: %w", path, err)
	}
	priv, err := ecdh.P256().NewPrivateKey(d)
	if err != nil {
		return Keys{}, fmt.Errorf("push keys %s: private_key: %w", path, err)
	}
	if base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()) != k.Public {
		return Keys{}, fmt.Errorf("push keys %s: public_key is not the private key's", path)
	}
	return k, nil
}
