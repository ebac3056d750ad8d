// Package protocol holds the wire contracts every svc-code service shares: the
// JSON error envelope, its codes and the HTTP status each code maps to. It
// imports only the standard library.
package protocol

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes used in the "error" field of every non-2xx JSON answer.
const (
	CodeUnauthorized     = "unauthorized"
	CodeOriginForbidden  = "origin_forbidden"
	CodeNotFound         = "not_found"
	CodeBadRequest       = "bad_request"
	CodeConflict         = "conflict"
	CodeProviderLocked   = "provider_locked"
	CodeForbidden        = "forbidden"
	CodeInterrupt        = "INTERRUPT"
	CodeSQLError         = "sql_error"
	CodeTooManyAttempts  = "too_many_attempts"
	CodePayloadTooLarge  = "payload_too_large"
	CodeTimeout          = "timeout"
	CodeInternal         = "internal"
	CodeInvalidPassword  = "invalid_password"
	CodeUnavailable      = "unavailable"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeUnsupportedMedia = "unsupported_media_type"
	// CodeUnknownHost: the request's Host is not a name the gateway
	// answers to (DNS rebinding, a misrouted request).
	CodeUnknownHost = "unknown_host"
	// CodeTooManyConnections: a client holds more connections than the
	// gateway allows one client.
	CodeTooManyConnections = "too_many_connections"
	// CodeStorageUnavailable: the database could not be reached (a
	// restart, a crash, a network cut); the same request may work a
	// moment later.
	CodeStorageUnavailable = "storage_unavailable"
	// CodeGone: what the request acts on existed but is no longer there
	// (a push answer token whose permission request was already answered
	// or ended).
	CodeGone = "gone"
)

var statusByCode = map[string]int{
	CodeUnauthorized:       http.StatusUnauthorized,
	CodeInvalidPassword:    http.StatusUnauthorized,
	CodeOriginForbidden:    http.StatusForbidden,
	CodeForbidden:          http.StatusForbidden,
	CodeNotFound:           http.StatusNotFound,
	CodeBadRequest:         http.StatusBadRequest,
	CodeSQLError:           http.StatusBadRequest,
	CodeInterrupt:          http.StatusBadRequest,
	CodeConflict:           http.StatusConflict,
	CodeProviderLocked:     http.StatusConflict,
	CodeTooManyAttempts:    http.StatusTooManyRequests,
	CodePayloadTooLarge:    http.StatusRequestEntityTooLarge,
	CodeTimeout:            http.StatusRequestTimeout,
	CodeUnavailable:        http.StatusBadGateway,
	CodeMethodNotAllowed:   http.StatusMethodNotAllowed,
	CodeUnsupportedMedia:   http.StatusUnsupportedMediaType,
	CodeUnknownHost:        http.StatusMisdirectedRequest,
	CodeTooManyConnections: http.StatusTooManyRequests,
	CodeInternal:           http.StatusInternalServerError,
	CodeStorageUnavailable: http.StatusServiceUnavailable,
	CodeGone:               http.StatusGone,
}

// Error is an error whose code and message are safe to show to a client.
// Anything that is not an *Error reaches the client as "internal" with no
// detail; its text is logged instead.
type Error struct {
	Code    string
	Message string
	// Status overrides the status derived from Code when non-zero.
	Status int
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// HTTPStatus is the status code the error is answered with.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return StatusOf(e.Code)
}

// Errorf builds an *Error with a formatted public message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// StatusOf maps an error code to its HTTP status; unknown codes are 500.
func StatusOf(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON envelope of every non-2xx answer.
type ErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// Public turns any error into the status and body a client may see, and
// reports whether the error was an internal one (to be logged by the caller).
func Public(err error) (status int, body ErrorBody, internal bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.HTTPStatus(), ErrorBody{Error: pe.Code, Message: pe.Message}, pe.Code == CodeInternal
	}
	return http.StatusInternalServerError, ErrorBody{Error: CodeInternal, Message: "internal error"}, true
}

// CodeForStatus picks the envelope code for a bare HTTP status, used when a
// framework reports an error by status alone (404 on an unknown route, 413
// on an oversized body, ...).
func CodeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestTimeout:
		return CodeTimeout
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMedia
	case http.StatusTooManyRequests:
		return CodeTooManyAttempts
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return CodeUnavailable
	}
	if status >= 400 && status < 500 {
		return CodeBadRequest
	}
	return CodeInternal
}
