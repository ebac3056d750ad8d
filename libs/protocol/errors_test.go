package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestPublic(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		wantStatus   int
		wantCode     string
		wantMessage  string
		wantInternal bool
	}{
		{"public error", Errorf(CodeNotFound, "no session %q", "x"), 404, CodeNotFound, `no session "x"`, false},
		{"wrapped public error", fmt.Errorf("load: %w", Errorf(CodeConflict, "busy")), 409, CodeConflict, "busy", false},
		{"status override", &Error{Code: CodeBadRequest, Status: 422}, 422, CodeBadRequest, "", false},
		{"plain error hides its text", errors.New("dial tcp: secret detail"), 500, CodeInternal, "internal error", true},
		{"explicit internal", &Error{Code: CodeInternal, Message: "boom"}, 500, CodeInternal, "boom", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, internal := Public(tt.err)
			if status != tt.wantStatus || body.Error != tt.wantCode || body.Message != tt.wantMessage || internal != tt.wantInternal {
				t.Errorf("Public() = %d %+v %v, want %d %s %q %v", status, body, internal, tt.wantStatus, tt.wantCode, tt.wantMessage, tt.wantInternal)
			}
		})
	}
}

func TestCodeForStatusRoundTrips(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 405, 408, 409, 413, 415, 429} {
		code := CodeForStatus(status)
		if got := StatusOf(code); got != status {
			t.Errorf("StatusOf(CodeForStatus(%d)) = %d (code %s)", status, got, code)
		}
	}
	if got := CodeForStatus(http.StatusTeapot); got != CodeBadRequest {
		t.Errorf("CodeForStatus(418) = %s, want bad_request", got)
	}
	if got := CodeForStatus(503); got != CodeUnavailable {
		t.Errorf("CodeForStatus(503) = %s, want unavailable", got)
	}
}
