package app

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/termhosts"
)

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// TestLoadConfigDefaults covers terminal's own variables; svcenv's tests cover
// the shared ones, and svchttptest's contract (cmd/terminal) the problems
// LoadConfig reports.
func TestLoadConfigDefaults(t *testing.T) {
	home := t.TempDir()
	cfg, err := LoadConfig(getenv(map[string]string{"SVC_CODE_HOME": home, "HOME": "/home/u", "SHELL": "/bin/sh"}))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"Addr", cfg.Addr, "127.0.0.1:8772"},
		{"DataHome", cfg.DataHome, home},
		{"Home", cfg.Home, "/home/u"},
		{"Shell", cfg.Shell, "/bin/sh"},
		{"Scrollback", cfg.Scrollback, 4 << 20},
		{"IdleTimeout", cfg.IdleTimeout, 24 * time.Hour},
		{"Heartbeat", cfg.Heartbeat, 5 * time.Second},
		{"WriteTimeout", cfg.WriteTimeout, 10 * time.Second},
		{"HostID", cfg.HostID, ""},
		{"AdvertiseURL", cfg.AdvertiseURL, ""},
		{"HostTTL", cfg.HostTTL, termhosts.HostTTL},
		{"ExecTimeout", cfg.ExecTimeout, 60 * time.Second},
		{"ExecMaxTimeout", cfg.ExecMaxTimeout, 600 * time.Second},
		{"ExecOutput", cfg.ExecOutput, 1 << 20},
		{"FlowHigh", cfg.FlowHigh, 2 << 20},
		{"FlowLow", cfg.FlowLow, 512 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestShellChoice(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"TERMINAL_SHELL wins", map[string]string{"TERMINAL_SHELL": "/bin/sh", "SHELL": "/bin/bash"}, "/bin/sh"},
		{"TERMINAL_SHELL by name", map[string]string{"TERMINAL_SHELL": "sh"}, "sh"},
		{"SHELL", map[string]string{"SHELL": "/bin/sh"}, "/bin/sh"},
		{"SHELL missing: bash", map[string]string{"SHELL": "/no/such/shell"}, "bash"},
		{"no SHELL: bash", map[string]string{}, "bash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["SVC_CODE_HOME"] = t.TempDir()
			cfg, err := LoadConfig(getenv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(cfg.Shell, "/"+strings.TrimPrefix(tt.want, "/")) && cfg.Shell != tt.want {
				t.Errorf("shell %q, want %q", cfg.Shell, tt.want)
			}
		})
	}
}

// TestLoadConfigProblems: every bad variable is named, all at once.
func TestLoadConfigProblems(t *testing.T) {
	env := map[string]string{
		"SVC_CODE_HOME":             t.TempDir(),
		"TERMINAL_SHELL":            "/no/such/shell",
		"TERMINAL_SCROLLBACK_KB":    "1",
		"TERMINAL_IDLE_TIMEOUT":     "soon",
		"TERMINAL_HEARTBEAT":        "1ms",
		"TERMINAL_WRITE_TIMEOUT":    "1ms",
		"TERMINAL_HOST_ID":          "a b",
		"TERMINAL_ADVERTISE_URL":    "https://h:1/x",
		"TERMINAL_HOST_TTL":         "10ms",
		"TERMINAL_EXEC_TIMEOUT":     "10m",
		"TERMINAL_EXEC_MAX_TIMEOUT": "1m",
		"TERMINAL_EXEC_OUTPUT_KB":   "0",
		"TERMINAL_FLOW_HIGH":        "8",
		"TERMINAL_FLOW_LOW":         "9",
	}
	_, err := LoadConfig(getenv(env))
	if err == nil {
		t.Fatal("LoadConfig accepted bad values")
	}
	for k := range env {
		if k != "SVC_CODE_HOME" && !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name %s", err, k)
		}
	}
}

func TestHostIdentity(t *testing.T) {
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41234}
	tests := []struct {
		name            string
		cfg             Config
		bound           net.Addr
		wantID, wantURL string
	}{
		{"defaults", Config{Addr: "127.0.0.1:0"}, bound, hostname + ":41234", "http://127.0.0.1:41234"},
		{"a name", Config{Addr: "localhost:8772"}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8772}, hostname + ":8772", "http://localhost:8772"},
		{"wildcard", Config{Addr: "0.0.0.0:8772"}, &net.TCPAddr{IP: net.IPv4zero, Port: 8772}, hostname + ":8772", "http://" + hostname + ":8772"},
		{"empty host", Config{Addr: ":8772"}, &net.TCPAddr{IP: net.IPv6zero, Port: 8772}, hostname + ":8772", "http://" + hostname + ":8772"},
		{"IPv6", Config{Addr: "[::1]:0"}, &net.TCPAddr{IP: net.IPv6loopback, Port: 5}, hostname + ":5", "http://[::1]:5"},
		{"set", Config{Addr: "0.0.0.0:0", HostID: "t1", AdvertiseURL: "http://t1.internal:9"}, bound, "t1", "http://t1.internal:9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := hostIdentity(tt.cfg, tt.bound)
			if err != nil || h.ID != tt.wantID || h.URL != tt.wantURL {
				t.Errorf("got %+v, %v; want %s %s", h, err, tt.wantID, tt.wantURL)
			}
		})
	}
}

// TestFlowWatermarks: the low watermark must stay below the high one.
func TestFlowWatermarks(t *testing.T) {
	for _, tt := range []struct {
		high, low string
		ok        bool
	}{
		{"64", "16", true}, {"64", "64", false}, {"64", "0", false}, {"262145", "16", false}, {"many", "16", false},
	} {
		_, err := LoadConfig(getenv(map[string]string{"SVC_CODE_HOME": t.TempDir(), "TERMINAL_FLOW_HIGH": tt.high, "TERMINAL_FLOW_LOW": tt.low}))
		if (err == nil) != tt.ok {
			t.Errorf("high %s low %s: %v, want ok=%v", tt.high, tt.low, err, tt.ok)
		}
	}
}
