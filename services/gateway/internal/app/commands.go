package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
)

// Passwd sets a new password: typed twice at a terminal, read from the
// first line of stdin otherwise; empty means generate one. Both epochs and
// the API token are reset, so every browser and script must sign in again;
// running gateways notice within a second.
func Passwd(ctx context.Context, cfg Config, in *os.File, out io.Writer) error {
	pw, err := readNewPassword(in, out)
	if err != nil {
		return err
	}
	file := configfile.New(cfg.ConfigPath)
	oldKeys, hadKeys, err := credential.CurrentKeyIDs(file)
	if err != nil {
		return err
	}
	pw, _, err = credential.Rotate(file, pw, cfg.HashParams)
	if err != nil {
		return err
	}
	if hadKeys {
		announceRotation(ctx, cfg, oldKeys, out)
	}
	if err := removeFirstPassword(cfg); err != nil {
		fmt.Fprintf(out, "svc-code: could not remove the void first password's file: %v\n", err)
	}
	fmt.Fprintf(out, "svc-code: password changed. Every browser session and API token is now void.\n")
	fmt.Fprintf(out, "svc-code: new password: %s\n", pw)
	fmt.Fprintf(out, "svc-code: the new API token is the api_token line of %s\n", cfg.ConfigPath)
	return nil
}

// announceRotation retires the old keys in Redis so that running gateways
// refuse them at once rather than at their next poll of the config file.
// Redis being down is no reason to fail: the gateways poll the file.
func announceRotation(ctx context.Context, cfg Config, oldKeys credential.KeyIDs, out io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, cfg.RedisURL)
	if err == nil {
		defer func() { _ = rdb.Close() }()
		err = credential.Retire(ctx, rdb, redisx.Keys{Prefix: cfg.RedisPrefix}, oldKeys)
	}
	if err != nil {
		fmt.Fprintf(out, "svc-code: could not tell running gateways through Redis (%v); they notice the new password within a second\n", err)
	}
}

func readNewPassword(in *os.File, out io.Writer) (string, error) {
	if term.IsTerminal(int(in.Fd())) {
		fmt.Fprint(out, "New password (empty to generate one): ")
		a, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(out)
		if err != nil {
			return "", err
		}
		if len(a) == 0 {
			return "", nil
		}
		fmt.Fprint(out, "Again: ")
		b, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(out)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ; nothing changed")
		}
		return checkPassword(string(a))
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return checkPassword(strings.TrimRight(line, "\r\n"))
}

func checkPassword(pw string) (string, error) {
	if pw == "" {
		return "", nil
	}
	if err := credential.CheckNewPassword(pw); err != nil {
		return "", fmt.Errorf("%w; nothing changed", err)
	}
	return pw, nil
}

// Healthcheck asks the local gateway's /health (for container health
// checks, where no curl is installed).
func Healthcheck(ctx context.Context, cfg Config) error {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /health answered %d", resp.StatusCode)
	}
	return nil
}
