package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// EnvPasswordOut names the file where a generated first password is written
// (a new file, mode 0600) instead of being shown on stderr, which make run
// keeps in the gateway's log.
const EnvPasswordOut = "SVC_PASSWORD_OUT"

// FirstPasswordFile is the name make run gives that file, beside the config
// file; `gateway passwd` removes it, since the password in it is void then.
const FirstPasswordFile = "first-password"

// showFirstPassword hands a generated first password to the user: into the
// file cfg.PasswordOutFile when set (the notice on stderr names the file,
// not the password), else on cfg.PasswordOut.
func showFirstPassword(cfg Config, pw string) error {
	if cfg.PasswordOutFile == "" {
		fmt.Fprintf(cfg.PasswordOut, "\nsvc-code: first start; your password is: %s\n"+
			"svc-code: it is shown only this once. Change it with `make passwd` (bin/gateway passwd).\n\n", pw)
		return nil
	}
	if err := writePrivate(cfg.PasswordOutFile, pw+"\n"); err != nil {
		return fmt.Errorf("write the first password to %s=%s: %w", EnvPasswordOut, cfg.PasswordOutFile, err)
	}
	fmt.Fprintf(cfg.PasswordOut, "svc-code: first start; a password was generated and written to %s (mode 0600)\n",
		cfg.PasswordOutFile)
	return nil
}

// writePrivate replaces path with content, mode 0600 from the start: a
// temporary file in the same directory (created 0700 when missing), synced,
// then renamed over path.
func writePrivate(path, content string) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".first-password-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := io.WriteString(f, content); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// removeFirstPassword deletes the first password's file beside the config
// file, if any: after a new password is set, it holds a void one.
func removeFirstPassword(cfg Config) error {
	err := os.Remove(filepath.Join(filepath.Dir(cfg.ConfigPath), FirstPasswordFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
