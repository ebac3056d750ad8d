package svcenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/envconf"
)

func TestReadRedisURL(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "redis.password")
	if err := os.WriteFile(pwFile, []byte("s3cret/pw@x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urlFile := filepath.Join(dir, "redis.url")
	if err := os.WriteFile(urlFile, []byte("redis://alice:filepw@127.0.0.1:6390/2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"default", nil, DefaultRedisURL},
		{"password in the URL", map[string]string{"REDIS_URL": "redis://:pw@127.0.0.1:6390/1"}, "redis://:pw@127.0.0.1:6390/1"},
		{"ACL user in the URL", map[string]string{"REDIS_URL": "redis://alice:pw@127.0.0.1:6390/1"}, "redis://alice:pw@127.0.0.1:6390/1"},
		{"URL from a file", map[string]string{"REDIS_URL_FILE": urlFile}, "redis://alice:filepw@127.0.0.1:6390/2"},
		{"password variable", map[string]string{"REDIS_URL": "redis://127.0.0.1:6390/1", "REDIS_PASSWORD": "pw"}, "redis://:pw@127.0.0.1:6390/1"},
		{"password file, URL names the user", map[string]string{"REDIS_URL": "redis://alice@127.0.0.1:6390/1", "REDIS_PASSWORD_FILE": pwFile}, "redis://alice:s3cret%2Fpw%40x@127.0.0.1:6390/1"},
		{"password file, default URL", map[string]string{"REDIS_PASSWORD_FILE": pwFile}, "redis://:s3cret%2Fpw%40x@127.0.0.1:6379/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := envconf.New(func(k string) string { return tt.env[k] })
			got := ReadRedisURL(r)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadRedisURLErrorsHideThePassword(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"not a URL", map[string]string{"REDIS_URL": "redis://:hunter2@127.0.0.1:bad port/0"}, "REDIS_URL is not a URL"},
		{"no host", map[string]string{"REDIS_URL": "hunter2"}, "REDIS_URL is not a URL"},
		{"wrong scheme", map[string]string{"REDIS_URL": "http://:hunter2@127.0.0.1:6379/0"}, "scheme"},
		{"two passwords", map[string]string{"REDIS_URL": "redis://:hunter2@127.0.0.1:6379/0", "REDIS_PASSWORD": "hunter2"}, "one place"},
		{"URL and its file", map[string]string{"REDIS_URL": "redis://:hunter2@h:1/0", "REDIS_URL_FILE": "/nonexistent"}, "use one"},
		{"missing password file", map[string]string{"REDIS_PASSWORD_FILE": "/nonexistent/hunter2"}, "REDIS_PASSWORD_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := envconf.New(func(k string) string { return tt.env[k] })
			ReadRedisURL(r)
			err := r.Err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2@") || strings.Contains(err.Error(), ":hunter2") {
				t.Errorf("the error repeats the password: %v", err)
			}
		})
	}
}
