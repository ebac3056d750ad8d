package svcenv

import (
	"slices"
	"testing"
)

func TestWithoutServerOnly(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "DATABASE_URL=postgres://svc_code:pw@h/db", "HOME=/home/me",
		"SVC_INTERNAL_SECRET=s3cret", "REDIS_URL=redis://h", "DATABASE_URL_X=kept", "SVC_CODE_PASSWORD=pw",
		"READONLY_DATABASE_URL_FILE=/run/ro", "SVC_CODE_PASSWORD_FILE=/run/pw", "noequals",
	}
	got := WithoutServerOnly(env)
	want := []string{"PATH=/usr/bin", "HOME=/home/me", "DATABASE_URL_X=kept", "noequals"}
	if !slices.Equal(got, want) {
		t.Errorf("WithoutServerOnly = %q, want %q", got, want)
	}
}
