package sqlapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Timing of the deadline's enforcement. At the deadline the statement is
// cancelled inside PostgreSQL (a cancel request, and statement_timeout as
// the server's own guard); pgGrace later the driver gives up on the
// connection, and writeGrace later still a client that stopped reading is
// cut off.
const (
	pgGrace    = time.Second
	writeGrace = 2 * time.Second
	// lockTimeout bounds waiting for a table lock (held by a migration,
	// say), below the deadline.
	lockTimeout = 5 * time.Second
	// resetTimeout bounds the connection reset after a query.
	resetTimeout = 2 * time.Second
)

// MaxRowBytes bounds one result row as PostgreSQL sends it (a value may
// be up to 1 GB there): a larger row is not read into memory, and the
// query fails with sql_error (or its result is cut with it). The encoders
// hold a row a few times over, and several queries run at once, so this
// bounds the memory a query can take.
const MaxRowBytes = 16 << 20

// query is one running statement on a connection of its own: from start
// until finish, it holds conn inside a READ ONLY transaction.
type query struct {
	conn     *pgxpool.Conn
	rr       *pgconn.ResultReader
	cols     []column
	deadline time.Time
	timeout  time.Duration
	ctx      context.Context
	cancel   context.CancelFunc

	cancelTimer *time.Timer
	cancelled   chan struct{} // closed once the deadline's cancel request is done
	release     func()        // frees the concurrency slot
}

// start acquires a connection, opens the READ ONLY transaction with its
// LOCAL limits and output settings, resolves the result's column types and
// starts the statement. The caller reads q.rr and then calls finish.
func (h *Handler) start(sql string, timeout time.Duration) (*query, error) {
	q := &query{timeout: timeout, deadline: time.Now().Add(timeout), cancelled: make(chan struct{})}
	q.ctx, q.cancel = context.WithDeadline(context.Background(), q.deadline.Add(pgGrace))
	waitCtx, waitCancel := context.WithDeadline(q.ctx, q.deadline)
	defer waitCancel()

	select {
	case h.slots <- struct{}{}:
		q.release = func() { <-h.slots }
	case <-waitCtx.Done():
		q.cancel()
		return nil, h.interrupt(timeout, "waiting for a free connection")
	}
	// The statement gets what is left of the deadline after the wait.
	left := time.Until(q.deadline)
	ms := strconv.FormatInt(max(left.Milliseconds(), 1), 10)
	lockMs := strconv.FormatInt(max(min(lockTimeout, left).Milliseconds(), 1), 10)
	setup := "BEGIN READ ONLY;" +
		"SET LOCAL statement_timeout = " + ms + ";" +
		"SET LOCAL lock_timeout = " + lockMs + ";" +
		"SET LOCAL idle_in_transaction_session_timeout = " + ms + ";" +
		"SET LOCAL standard_conforming_strings = on;" +
		"SET LOCAL TimeZone = 'UTC';" +
		"SET LOCAL DateStyle = 'ISO, YMD';" +
		"SET LOCAL IntervalStyle = 'iso_8601';" +
		"SET LOCAL bytea_output = 'hex';" +
		"SET LOCAL extra_float_digits = 1;" +
		// A first snapshot: from here on, transaction_read_only cannot be
		// turned off ("must be set before any query").
		"SELECT 1"
	// A pooled connection may have died since its last use (a server
	// restart): one that fails the setup with a network error is dropped
	// and another one tried, once.
	var conn *pgxpool.Conn
	for attempt := 0; ; attempt++ {
		c, err := h.pool.Acquire(waitCtx)
		if err != nil {
			q.release()
			q.cancel()
			if waitCtx.Err() != nil {
				return nil, h.interrupt(timeout, "waiting for a free connection")
			}
			return nil, fmt.Errorf("acquire a read-only connection: %w", err)
		}
		_, err = c.Conn().PgConn().Exec(q.ctx, setup).ReadAll()
		if err == nil {
			conn = c
			break
		}
		cctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
		_ = c.Conn().Close(cctx)
		cancel()
		c.Release()
		if attempt > 0 || !connectionLost(err) || waitCtx.Err() != nil {
			q.release()
			q.cancel()
			return nil, h.dbError(q, err)
		}
	}
	q.conn = conn
	pg := conn.Conn().PgConn()
	// A row past the limit fails before its body is read, and the driver
	// closes the connection (finish drops it).
	pg.Frontend().SetMaxBodyLen(MaxRowBytes)
	q.cancelTimer = time.AfterFunc(time.Until(q.deadline), func() {
		defer close(q.cancelled)
		cctx, cancel := context.WithTimeout(context.Background(), pgGrace)
		defer cancel()
		_ = pg.CancelRequest(cctx) // the connection is dropped in finish anyway
	})
	sd, err := pg.Prepare(q.ctx, "", sql, nil)
	if err != nil {
		h.finish(q, true)
		return nil, h.dbError(q, err)
	}
	q.cols, err = h.columns(q.ctx, conn.Conn(), sd.Fields)
	if err != nil {
		h.finish(q, false)
		return nil, h.dbError(q, err)
	}
	// Text results for every column: PostgreSQL's own output, canonicalized.
	q.rr = pg.ExecParams(q.ctx, sql, nil, nil, nil, nil)
	return q, nil
}

// finish ends the transaction and gives the connection back, reset: it
// rolls back (nothing of a read survives anyway, and LISTEN, NOTIFY or SET
// done inside vanish with it), then DISCARD ALL drops what a rollback
// keeps (session advisory locks, prepared statements, temporary objects).
// A connection that was cancelled, broken, or fails the reset is closed
// instead, so its backend leaves pg_stat_activity at once.
func (h *Handler) finish(q *query, healthy bool) {
	defer q.release()
	defer q.cancel()
	if !q.cancelTimer.Stop() {
		<-q.cancelled // it fired: wait until the cancel request is done
		healthy = false
	}
	conn := q.conn
	ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
	defer cancel()
	pg := conn.Conn().PgConn()
	if healthy && !pg.IsClosed() && !pg.IsBusy() {
		_, err := pg.Exec(ctx, "ROLLBACK").ReadAll()
		if err == nil {
			_, err = pg.Exec(ctx, "DISCARD ALL").ReadAll()
		}
		if err == nil {
			err = conn.Conn().DeallocateAll(ctx) // the driver's statement cache matches DISCARD ALL
		}
		if err == nil && pg.TxStatus() == 'I' {
			conn.Release()
			return
		}
	}
	_ = conn.Conn().Close(ctx)
	conn.Release() // a closed connection is destroyed, not pooled
}

// interrupt is the INTERRUPT error for a deadline of d.
func (h *Handler) interrupt(d time.Duration, during string) *protocol.Error {
	return protocol.Errorf(protocol.CodeInterrupt,
		"the query ran past its deadline of %s and was cancelled (%s)", d, during)
}

// dbError maps an error of PostgreSQL or the driver to the answer: a
// cancellation or a dropped connection past the deadline is INTERRUPT, any
// other server error is sql_error with PostgreSQL's message, and the rest
// is internal.
func (h *Handler) dbError(q *query, err error) error {
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooBig) {
		return &protocol.Error{Code: protocol.CodeSQLError, Message: fmt.Sprintf(
			"a result row is %d bytes, larger than the %d MiB this endpoint sends: select shorter values (left, substr, length)",
			tooBig.ActualBodyLen, MaxRowBytes>>20)}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57014", "25P03": // query_canceled, idle_in_transaction_session_timeout
			return h.interrupt(q.timeout, "running")
		}
		return &protocol.Error{Code: protocol.CodeSQLError, Message: pgErr.Message}
	}
	if !time.Now().Before(q.deadline) || errors.Is(err, context.DeadlineExceeded) {
		return h.interrupt(q.timeout, "running")
	}
	return fmt.Errorf("run sql: %w", err)
}

// connectionLost reports whether err says the connection itself is gone
// (a network error, or the server ending the session) rather than the
// statement failing.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	return pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" || strings.HasPrefix(pgErr.Code, "08")
}

// typeInfo is what pg_type says about a type the table does not know.
type typeInfo struct {
	typtype  string
	category string
	elem     uint32
	base     uint32
	delim    string
}

// columns says how to print each result field, looking up in pg_type
// (once per type, then cached) the types that are not built in: domains
// print as their base type, arrays as JSON arrays, the rest as text.
func (h *Handler) columns(ctx context.Context, conn *pgx.Conn, fields []pgconn.FieldDescription) ([]column, error) {
	cols := make([]column, len(fields))
	for round := 0; round < 4; round++ {
		var missing []uint32
		for i, f := range fields {
			c, ok := h.resolve(f.DataTypeOID)
			if !ok {
				missing = append(missing, h.unresolved(f.DataTypeOID)...)
				continue
			}
			c.name = f.Name
			cols[i] = c
		}
		if len(missing) == 0 {
			return cols, nil
		}
		rows, err := conn.Query(ctx, `SELECT t.oid, t.typtype::text, t.typcategory::text, t.typelem, t.typbasetype,
			coalesce(e.typdelim::text, ',') FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem
			WHERE t.oid = ANY($1::oid[])`, pgx.QueryExecModeExec, missing)
		if err != nil {
			return nil, err
		}
		var oid uint32
		var ti typeInfo
		_, err = pgx.ForEachRow(rows, []any{&oid, &ti.typtype, &ti.category, &ti.elem, &ti.base, &ti.delim}, func() error {
			h.types.Store(oid, ti)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, o := range missing {
			if _, ok := h.types.Load(o); !ok {
				h.types.Store(o, typeInfo{typtype: "b", category: "U", delim: ","}) // unknown: text
			}
		}
	}
	for i, f := range fields { // types nested deeper than this print as text
		if c, ok := h.resolve(f.DataTypeOID); ok {
			c.name = f.Name
			cols[i] = c
		} else {
			cols[i] = column{name: f.Name}
		}
	}
	return cols, nil
}

// resolve returns how to print type oid, if everything about it is known.
func (h *Handler) resolve(oid uint32) (column, bool) {
	for range 8 {
		if c, ok := builtinColumn(oid); ok {
			return c, true
		}
		v, ok := h.types.Load(oid)
		if !ok {
			return column{}, false
		}
		ti := v.(typeInfo)
		switch {
		case ti.typtype == "d":
			oid = ti.base
			continue
		case ti.category == "A" && ti.elem != 0:
			ec, ok := h.resolve(ti.elem)
			if !ok {
				return column{}, false
			}
			delim := byte(',')
			if ti.delim != "" {
				delim = ti.delim[0]
			}
			elem := ec.kind
			if elem == kindArray {
				elem = kindText
			}
			return column{kind: kindArray, elem: elem, delim: delim}, true
		}
		return column{kind: kindText}, true
	}
	return column{kind: kindText}, true
}

// unresolved lists the type OIDs still to look up to resolve oid.
func (h *Handler) unresolved(oid uint32) []uint32 {
	for range 8 {
		if _, ok := builtinColumn(oid); ok {
			return nil
		}
		v, ok := h.types.Load(oid)
		if !ok {
			return []uint32{oid}
		}
		ti := v.(typeInfo)
		switch {
		case ti.typtype == "d":
			oid = ti.base
		case ti.category == "A" && ti.elem != 0:
			oid = ti.elem
		default:
			return nil
		}
	}
	return nil
}

// typeCache maps a type OID to its typeInfo.
type typeCache = sync.Map
