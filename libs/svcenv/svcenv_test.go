package svcenv

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/internalauth"
)

func mapenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadCommonDefaults(t *testing.T) {
	home := t.TempDir()
	r := envconf.New(mapenv(map[string]string{"SVC_CODE_HOME": home}))
	c := LoadCommon(r)
	if err := r.Err(); err != nil {
		t.Fatalf("LoadCommon: %v", err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"DataHome", c.DataHome, home},
		{"RedisURL", c.RedisURL, "redis://127.0.0.1:6379/0"},
		{"RedisPrefix", c.RedisPrefix, "svc:"},
		{"LogFormat", c.LogFormat, "text"},
		{"LogLevel", c.LogLevel, "info"},
		{"ShutdownTimeout", c.ShutdownTimeout, 10 * time.Second},
		{"BodyLimit", c.BodyLimit, 32 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// A host profile moves the data home and the Redis prefix; REDIS_PREFIX and
// SVC_CODE_HOME still win.
func TestLoadCommonProfile(t *testing.T) {
	tests := []struct {
		name                 string
		env                  map[string]string
		wantHome, wantPrefix string
	}{
		{"profile", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work"}, "/h/.svc-code/profiles/work", "svc-work:"},
		{"explicit", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work", "SVC_CODE_HOME": "/d", "REDIS_PREFIX": "x:"}, "/d", "x:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := envconf.New(mapenv(tt.env))
			c := LoadCommon(r)
			if err := r.Err(); err != nil {
				t.Fatalf("LoadCommon: %v", err)
			}
			if c.DataHome != tt.wantHome || c.RedisPrefix != tt.wantPrefix {
				t.Errorf("got home %q prefix %q, want %q %q", c.DataHome, c.RedisPrefix, tt.wantHome, tt.wantPrefix)
			}
		})
	}
	r := envconf.New(mapenv(map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "../etc"}))
	LoadCommon(r)
	if r.Err() == nil {
		t.Error("LoadCommon with profile ../etc: want an error")
	}
}

func TestLoadCommonValues(t *testing.T) {
	r := envconf.New(mapenv(map[string]string{
		"SVC_CODE_HOME": "/srv/data", "REDIS_URL": "redis://r:1/2", "REDIS_PREFIX": "t:",
		"LOG_FORMAT": "JSON", "LOG_LEVEL": "Debug", "SHUTDOWN_TIMEOUT": "3s", "BODY_LIMIT_MB": "2",
	}))
	c := LoadCommon(r)
	if err := r.Err(); err != nil {
		t.Fatalf("LoadCommon: %v", err)
	}
	want := Common{
		DataHome: "/srv/data", RedisURL: "redis://r:1/2", RedisPrefix: "t:", LogFormat: "json",
		LogLevel: "debug", ShutdownTimeout: 3 * time.Second, BodyLimit: 2 << 20,
	}
	c.getenv = nil // funcs compare equal only when both are nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

func TestLoadCommonReportsEveryProblem(t *testing.T) {
	r := envconf.New(mapenv(map[string]string{
		"SVC_CODE_HOME": t.TempDir(), "LOG_FORMAT": "xml", "LOG_LEVEL": "loud", "SHUTDOWN_TIMEOUT": "0s",
		"BODY_LIMIT_MB": "0", "SVC_INTERNAL_SECRET": "0123456789abcdef", "SVC_INTERNAL_SECRET_FILE": "/nope",
	}))
	LoadCommon(r)
	err := r.Err()
	if err == nil {
		t.Fatal("LoadCommon accepted bad values")
	}
	for _, want := range []string{"LOG_FORMAT", "LOG_LEVEL", "SHUTDOWN_TIMEOUT", "BODY_LIMIT_MB", "SVC_INTERNAL_SECRET"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestPrepare(t *testing.T) {
	t.Run("key file in a new data home", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		c := LoadCommon(envconf.New(mapenv(map[string]string{"SVC_CODE_HOME": home})))
		s, err := c.Prepare()
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		st, err := os.Stat(home)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("data home: %v, mode %v; want a 0700 directory", err, st.Mode().Perm())
		}
		key, err := os.ReadFile(filepath.Join(home, "internal.key"))
		if err != nil {
			t.Fatalf("key file: %v", err)
		}
		if !s.Check(strings.TrimSpace(string(key))) {
			t.Error("secret does not match the key file")
		}
	})
	t.Run("secret from the environment", func(t *testing.T) {
		c := LoadCommon(envconf.New(mapenv(map[string]string{
			"SVC_CODE_HOME": t.TempDir(), "SVC_INTERNAL_SECRET": "0123456789abcdef-env",
		})))
		s, err := c.Prepare()
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		if !s.Check("0123456789abcdef-env") {
			t.Error("secret is not the one from the environment")
		}
	})
	t.Run("short secret", func(t *testing.T) {
		c := LoadCommon(envconf.New(mapenv(map[string]string{"SVC_CODE_HOME": t.TempDir(), "SVC_INTERNAL_SECRET": "short"})))
		if _, err := c.Prepare(); err == nil || !strings.Contains(err.Error(), internalauth.EnvVar) {
			t.Errorf("Prepare = %v, want an error naming %s", err, internalauth.EnvVar)
		}
	})
	t.Run("zero Common", func(t *testing.T) {
		if _, err := (Common{}).Prepare(); err == nil {
			t.Error("Prepare on a zero Common succeeded")
		}
	})
}
