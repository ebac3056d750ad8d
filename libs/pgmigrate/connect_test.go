package pgmigrate

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

func TestConnect(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name    string
		value   func(t *testing.T) string
		envFile func(t *testing.T) string // the postgres.env lines, if any
		wantErr []string                  // nil: Connect must succeed
	}{
		{"from the variable", func(t *testing.T) string { return pgmigratetest.MustSchema(t) }, nil, nil},
		{"from postgres.env", nil, func(t *testing.T) string { return "DATABASE_URL=" + pgmigratetest.MustSchema(t) + "\n" }, nil},
		{"not set anywhere", nil, nil, []string{"DATABASE_URL is not set", "postgres.env", "provision.sh"}},
		{
			"unreachable", func(*testing.T) string { return "postgres://u:hunter2@" + closedAddr + "/db" }, nil,
			[]string{"reach postgres", "DATABASE_URL", "refused"},
		},
		{
			"unparsable", func(*testing.T) string { return "postgres://u:hunter2@127.0.0.1:port/db" }, nil,
			[]string{"parse DATABASE_URL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			var value string
			if tt.value != nil {
				value = tt.value(t)
			}
			if tt.envFile != nil {
				if err := os.WriteFile(filepath.Join(home, "postgres.env"), []byte(tt.envFile(t)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			pool, err := Connect(context.Background(), home, "DATABASE_URL", value)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer pool.Close()
				if err := pool.Ping(context.Background()); err != nil {
					t.Errorf("Ping: %v", err)
				}
				return
			}
			if err == nil {
				pool.Close()
				t.Fatal("Connect succeeded")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}
