package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svc-code/svc-code/services/chat/internal/store"
)

func TestUnavailable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("append 1 messages: set the transaction's settings: %w", err) }
	tests := []struct {
		name          string
		err           error
		want, notSent bool
	}{
		{"nil", nil, false, false},
		{"connection lost under a statement", wrap(io.ErrUnexpectedEOF), true, false},
		{"EOF", wrap(io.EOF), true, false},
		{"connection refused", wrap(&pgconn.ConnectError{}), true, true},
		{"reset by peer", wrap(syscall.ECONNRESET), true, false},
		{"broken pipe", wrap(syscall.EPIPE), true, false},
		{"closed connection", wrap(net.ErrClosed), true, false},
		{"network error", wrap(&net.OpError{Op: "read", Err: errors.New("boom")}), true, false},
		{"admin shutdown", wrap(&pgconn.PgError{Code: "57P01"}), true, true},
		{"crash shutdown", wrap(&pgconn.PgError{Code: "57P02"}), true, true},
		{"cannot connect now", wrap(&pgconn.PgError{Code: "57P03"}), true, true},
		{"connection failure", wrap(&pgconn.PgError{Code: "08006"}), true, true},
		{"too many connections", wrap(&pgconn.PgError{Code: "53300"}), true, true},
		{"unique violation", wrap(&pgconn.PgError{Code: "23505"}), false, true},
		{"statement timeout", wrap(&pgconn.PgError{Code: "57014"}), false, true},
		{"canceled", wrap(context.Canceled), false, false},
		{"closed pool", wrap(errors.New("closed pool")), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Unavailable(tt.err); got != tt.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if got := store.NotSent(tt.err); got != tt.notSent {
				t.Errorf("NotSent(%v) = %v, want %v", tt.err, got, tt.notSent)
			}
		})
	}
}
