package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means that PostgreSQL could not be
// reached or the connection to it was lost: it could not connect (refused,
// the server starting up or shutting down), the connection ended under a
// statement (unexpected EOF, reset, closed), or the server ended the
// session (admin or crash shutdown, 57P01-57P03; connection errors, class
// 08; too many connections, 53300, as while a restarted server fills up).
// Such a failure says nothing about the statement itself: the same call on
// a fresh connection, a moment later, may go through. Whether it committed
// is unknown unless NotSent also holds: retry only what is safe to run
// twice (an append with its key, a read).
//
// A statement the server refused (any other SQLSTATE), a context ended and
// a closed pool are not Unavailable.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// NotSent reports whether err surely left the database unchanged: nothing
// reached it (no connection could be made, or pgx knows the statement was
// not sent), or the server answered with an error, which ends the
// transaction without its commit (a server shutting down answers 57P01 to
// the next statement of a connection it ended). Anything else that is
// Unavailable (the connection lost under a statement) may have been
// committed.
func NotSent(err error) bool {
	var ce *pgconn.ConnectError
	var pgErr *pgconn.PgError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err) || errors.As(err, &pgErr)
}
