package sqlapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Path is the endpoint's route.
const Path = "/api/shadow-db/sql"

// MaxSQLBytes bounds the SQL of one request (413 past it): the validator
// keeps a token per word, so the server's body limit alone would let one
// request of tiny tokens take gigabytes before any check.
const MaxSQLBytes = 1 << 20

// DefaultMaxResponseBytes bounds the bytes of one answer by default: a
// result that would pass it is cut there with payload_too_large.
const DefaultMaxResponseBytes = 256 << 20

// DefaultMaxConcurrent is how many SQL queries run at once by default;
// more wait for a slot (within their deadline).
const DefaultMaxConcurrent = 4

// recheckEvery is how often a request re-runs a failed role check.
const recheckEvery = 30 * time.Second

// flushEvery is the longest a streamed row waits in the buffer.
const flushEvery = 100 * time.Millisecond

// Config is what the endpoint needs.
type Config struct {
	// Pool is the read-only role's pool (svc_readonly): the endpoint's
	// own, apart from the owner role's pool that ingest writes through.
	Pool *pgxpool.Pool
	// Tables are the analytics tables and views, the only relations the
	// role may read (schema.Tables).
	Tables []string
	// Timeout gives each query's deadline; nil means DefaultTimeout.
	Timeout TimeoutFunc
	// MaxConcurrent bounds the queries running at once, so that at most
	// that many connections of Pool serve SQL; zero means
	// DefaultMaxConcurrent. It is capped at Pool's MaxConns minus one, so
	// that the health check always finds a connection.
	MaxConcurrent int
	// MaxResponseBytes bounds the bytes of one answer: the result is cut,
	// with payload_too_large in its trailer, at the first row that would
	// pass it. Zero means DefaultMaxResponseBytes; negative, no bound.
	MaxResponseBytes int64
	Log              *slog.Logger
}

// Handler serves POST /api/shadow-db/sql.
type Handler struct {
	pool    *pgxpool.Pool
	tables  []string
	timeout TimeoutFunc
	slots   chan struct{}
	log     *slog.Logger
	types   typeCache
	// maxResponse bounds an answer's bytes; 0: no bound.
	maxResponse int64

	// validate is Validate; tests of the other fences replace it.
	validate func(string) error

	roleMu    sync.Mutex
	role      string
	problems  []string // nil when the role is safe
	checkErr  error    // the check itself failed
	checkedAt time.Time
}

// New returns the endpoint and checks the read-only role at once (see
// CheckRole); while the role is unsafe, or the check cannot run, the
// endpoint answers 503 and re-checks at most every 30 s.
func New(ctx context.Context, cfg Config) *Handler {
	n := cfg.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	// Keep one of the pool's connections for the health check.
	if most := int(cfg.Pool.Config().MaxConns) - 1; n > most {
		n = max(most, 1)
	}
	timeout := cfg.Timeout
	if timeout == nil {
		timeout = FixedTimeout(DefaultTimeout)
	}
	maxResponse := cfg.MaxResponseBytes
	switch {
	case maxResponse == 0:
		maxResponse = DefaultMaxResponseBytes
	case maxResponse < 0:
		maxResponse = 0
	}
	h := &Handler{
		maxResponse: maxResponse,
		pool:        cfg.Pool,
		tables:      cfg.Tables,
		timeout:     timeout,
		slots:       make(chan struct{}, n),
		log:         cfg.Log,
		validate:    Validate,
		role:        cfg.Pool.Config().ConnConfig.User,
	}
	h.checkRole(ctx)
	return h
}

// Register adds the route to r.
func (h *Handler) Register(r fiber.Router) {
	r.Post(Path, h.serve)
}

// Ready reports nil when the endpoint serves, or the error it answers.
func (h *Handler) Ready(ctx context.Context) error {
	h.roleMu.Lock()
	defer h.roleMu.Unlock()
	if h.problems == nil && h.checkErr == nil {
		return nil
	}
	if time.Since(h.checkedAt) >= recheckEvery {
		h.checkRoleLocked(ctx)
		if h.problems == nil && h.checkErr == nil {
			return nil
		}
	}
	msg := roleProblem(h.role, h.problems)
	if h.checkErr != nil {
		msg = "the SQL endpoint is disabled: the read-only role " + h.role + " could not be checked; it is retried every 30 s"
	}
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: msg, Status: http.StatusServiceUnavailable}
}

func (h *Handler) checkRole(ctx context.Context) {
	h.roleMu.Lock()
	defer h.roleMu.Unlock()
	h.checkRoleLocked(ctx)
}

func (h *Handler) checkRoleLocked(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	problems, err := CheckRole(cctx, h.pool, h.tables)
	h.checkedAt = time.Now()
	h.checkErr = err
	h.problems = nil
	switch {
	case err != nil:
		h.log.ErrorContext(ctx, "sql endpoint disabled: read-only role check failed", "role", h.role, "err", err)
	case len(problems) > 0:
		h.problems = problems
		h.log.ErrorContext(ctx, "sql endpoint disabled: read-only role is unsafe", "role", h.role, "problems", problems)
	}
}

// serve answers one query: it reads and validates the body, starts the
// statement, waits for its first row (so that an error before any row is
// an ordinary error answer), then streams the rest.
func (h *Handler) serve(c *fiber.Ctx) error {
	enc, err := encoderFor(c.Query("format"))
	if err != nil {
		return err
	}
	sql, err := readSQL(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := h.Ready(ctx); err != nil {
		return err
	}
	if err := h.validate(sql); err != nil {
		var r *RefusedError
		if errors.As(err, &r) {
			return &protocol.Error{Code: protocol.CodeForbidden, Message: r.Reason, Status: http.StatusBadRequest}
		}
		return err
	}
	q, err := h.start(sql, h.timeout(ctx))
	if err != nil {
		return err
	}
	hasRow := q.rr.NextRow()
	if !hasRow {
		if _, err := q.rr.Close(); err != nil {
			h.finish(q, true)
			return h.dbError(q, err)
		}
	}

	c.Set(fiber.HeaderContentType, enc.contentType())
	c.Set(fiber.HeaderCacheControl, "no-store")
	// A client that stops reading must not hold the connection past the
	// deadline: writes to it fail writeGrace after. The deadline is lifted
	// when the result is written, for the next request on the connection.
	netConn := c.Context().Conn()
	if netConn != nil {
		_ = netConn.SetWriteDeadline(q.deadline.Add(writeGrace))
	}
	requestID := string([]byte(c.Get(protocol.HeaderRequestID)))
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		if netConn != nil {
			defer func() { _ = netConn.SetWriteDeadline(time.Time{}) }()
		}
		h.stream(w, q, enc, hasRow, requestID)
	})
	return nil
}

// stream writes the result to w, one row at a time, flushing at least
// every flushEvery, and ends the query. An error after the head was sent
// (the deadline, a failing expression, a client gone) cuts the result
// with the format's trailer.
func (h *Handler) stream(w *bufio.Writer, q *query, enc encoder, hasRow bool, requestID string) {
	started := time.Now()
	buf := enc.head(make([]byte, 0, 4096), q.cols)
	var scratch []byte
	var count, sent int64
	writeErr := error(nil)
	var tooLarge *protocol.Error
	lastFlush := time.Now()
	for hasRow {
		buf, scratch = enc.row(buf, q.cols, q.rr.Values(), count == 0, scratch)
		if h.maxResponse > 0 && sent+int64(len(buf)) > h.maxResponse-tailReserve {
			tooLarge = h.responseTooLarge(count, sent)
			buf = buf[:0]
			if count == 0 { // the head is still in buf: keep it
				buf = enc.head(buf, q.cols)
			}
			break
		}
		sent += int64(len(buf))
		count++
		if err := writeChunks(w, buf); err != nil {
			writeErr = err
			break
		}
		buf = buf[:0]
		if cap(buf) > keepBuffer { // one big row: do not keep its buffers
			buf, scratch = make([]byte, 0, 4096), nil
		}
		if count == 1 || time.Since(lastFlush) >= flushEvery {
			if err := w.Flush(); err != nil {
				writeErr = err
				break
			}
			lastFlush = time.Now()
		}
		hasRow = q.rr.NextRow()
	}
	if tooLarge != nil {
		// The rest is not read: the statement's connection is dropped,
		// as for a client gone.
		q.cancel()
		_, _ = q.rr.Close()
		h.finish(q, false)
		buf = enc.tail(buf, count, tooLarge)
		if _, err := w.Write(buf); err == nil {
			_ = w.Flush()
		}
		h.log.Warn("sql result cut", "request_id", requestID, "rows", count, "code", tooLarge.Code, "message", tooLarge.Message)
		return
	}
	if writeErr != nil {
		// The client is gone: drop the statement's connection rather than
		// drain the rest of the result (the backend may be blocked sending
		// it, where a cancel request does not reach it). Ending q.ctx makes
		// the driver give up on the connection at once; finish closes it.
		q.cancel()
		_, _ = q.rr.Close()
		h.finish(q, false)
		h.log.Warn("sql result cut: client gone", "request_id", requestID, "rows", count, "err", writeErr)
		return
	}
	_, err := q.rr.Close()
	var cut *protocol.Error
	if err != nil {
		if !errors.As(h.dbError(q, err), &cut) {
			h.log.Error("sql result cut", "request_id", requestID, "rows", count, "err", err)
			cut = &protocol.Error{Code: protocol.CodeInternal, Message: "internal error"}
		}
	}
	h.finish(q, err == nil)
	buf = enc.tail(buf, count, cut)
	if _, err := w.Write(buf); err == nil {
		_ = w.Flush()
	}
	if cut != nil {
		h.log.Warn("sql result cut", "request_id", requestID, "rows", count, "code", cut.Code, "message", cut.Message)
		return
	}
	h.log.Debug("sql query done", "request_id", requestID, "rows", count, "duration", time.Since(started))
}

// tailReserve is room kept under the response bound for the trailer.
const tailReserve = 1 << 10

// responseTooLarge is the error that cuts a result at the response bound,
// after count rows of sent bytes.
func (h *Handler) responseTooLarge(count, sent int64) *protocol.Error {
	return &protocol.Error{Code: protocol.CodePayloadTooLarge, Message: fmt.Sprintf(
		"the result is larger than the %d MiB this endpoint sends: cut after %d rows (%d bytes); "+
			"aggregate, select fewer or shorter columns, or add LIMIT", h.maxResponse>>20, count, sent)}
}

// keepBuffer is the largest row buffer kept for the next rows; writeChunk
// is the most written at once (fasthttp's stream pipe copies each write).
const (
	keepBuffer = 1 << 20
	writeChunk = 64 << 10
)

// writeChunks writes b to w in pieces of at most writeChunk bytes, so that
// a large row is not copied whole into the response pipe.
func writeChunks(w *bufio.Writer, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// encoderFor picks the format from the query parameter: json (also when
// absent) or tsv.
func encoderFor(format string) (encoder, error) {
	switch strings.ToLower(format) {
	case "", FormatJSON:
		return jsonEncoder{}, nil
	case FormatTSV:
		return tsvEncoder{}, nil
	}
	return nil, protocol.Errorf(protocol.CodeBadRequest, "unknown format %q: use json (the default) or tsv", format)
}

// rawSQLTypes are the content types whose body is the SQL itself.
// application/x-www-form-urlencoded is what curl --data-binary sends by
// default; the body is taken as it is, not form-decoded.
var rawSQLTypes = map[string]bool{
	"text/plain": true, "application/sql": true, "text/x-sql": true,
	"application/x-www-form-urlencoded": true, "application/octet-stream": true,
}

// readSQL returns the SQL of the body: raw text, or JSON {"sql": "..."}.
func readSQL(c *fiber.Ctx) (string, error) {
	body := c.Body()
	// JSON may escape each character of the SQL in up to 6 bytes.
	if len(body) > 6*MaxSQLBytes+64 {
		return "", sqlTooLarge(len(body))
	}
	ct := c.Get(fiber.HeaderContentType)
	mt := ""
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return "", protocol.Errorf(protocol.CodeUnsupportedMedia, "malformed Content-Type %q: send text/plain (raw SQL) or application/json ({\"sql\": ...})", ct)
		}
	}
	var sql string
	switch {
	case mt == fiber.MIMEApplicationJSON:
		var req struct {
			SQL *string `json:"sql"`
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 || trimmed[0] != '{' {
			return "", protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: want {\"sql\": \"...\"}")
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return "", protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: %v", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return "", protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: trailing data after the object")
		}
		if req.SQL == nil {
			return "", protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: missing \"sql\"")
		}
		sql = *req.SQL
	case mt == "" || rawSQLTypes[mt]:
		if !utf8.Valid(body) {
			return "", protocol.Errorf(protocol.CodeBadRequest, "the SQL is not valid UTF-8")
		}
		sql = string(body) // a copy: fasthttp reuses the body's buffer
	default:
		return "", protocol.Errorf(protocol.CodeUnsupportedMedia, "unsupported Content-Type %q: send text/plain (raw SQL) or application/json ({\"sql\": ...})", mt)
	}
	if len(sql) > MaxSQLBytes {
		return "", sqlTooLarge(len(sql))
	}
	if strings.TrimSpace(sql) == "" {
		return "", protocol.Errorf(protocol.CodeBadRequest, "empty query: send the SQL as the body (text/plain) or as JSON {\"sql\": \"...\"}")
	}
	return sql, nil
}

// sqlTooLarge is the 413 for a request of n bytes past MaxSQLBytes.
func sqlTooLarge(n int) error {
	return protocol.Errorf(protocol.CodePayloadTooLarge, "the SQL is %d bytes: at most %d (1 MiB)", n, MaxSQLBytes)
}
