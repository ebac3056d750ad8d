package termws

import (
	"encoding/json"
	"testing"
)

func TestParseControl(t *testing.T) {
	tests := []struct {
		name     string
		msg      string
		wantCtl  bool
		wantKind string
		wantRows uint16
		wantCols uint16
		wantErr  bool
	}{
		{"ping", `{"type":"ping"}`, true, TypePing, 0, 0, false},
		{"ping with extra fields", `{"type":"ping","id":3}`, true, TypePing, 0, 0, false},
		{"resize", `{"type":"resize","rows":40,"cols":120}`, true, TypeResize, 40, 120, false},
		{"resize with spaces", ` {"type":"resize","rows":1,"cols":1000}`, false, "", 0, 0, false},
		{"resize at the bounds", `{"type":"resize","rows":1000,"cols":1}`, true, TypeResize, 1000, 1, false},
		{"resize zero", `{"type":"resize","rows":0,"cols":80}`, true, TypeResize, 0, 0, true},
		{"resize huge", `{"type":"resize","rows":24,"cols":65536}`, true, TypeResize, 0, 0, true},
		{"resize negative", `{"type":"resize","rows":-1,"cols":80}`, true, TypeResize, 0, 0, true},
		{"resize fraction", `{"type":"resize","rows":24.5,"cols":80}`, true, TypeResize, 0, 0, true},
		{"resize exponent", `{"type":"resize","rows":2.4e1,"cols":80}`, true, TypeResize, 0, 0, true},
		{"resize string", `{"type":"resize","rows":"24","cols":"80"}`, true, TypeResize, 0, 0, true},
		{"resize missing cols", `{"type":"resize","rows":24}`, true, TypeResize, 0, 0, true},
		{"resize null", `{"type":"resize","rows":null,"cols":80}`, true, TypeResize, 0, 0, true},
		{"unknown type", `{"type":"nope"}`, false, "", 0, 0, false},
		{"server type", `{"type":"pong"}`, false, "", 0, 0, false},
		{"no type", `{"rows":1}`, false, "", 0, 0, false},
		{"type not a string", `{"type":1}`, false, "", 0, 0, false},
		{"malformed", `{"type":"ping"`, false, "", 0, 0, false},
		{"trailing data", `{"type":"ping"} x`, false, "", 0, 0, false},
		{"array", `[{"type":"ping"}]`, false, "", 0, 0, false},
		{"brace alone", `{`, false, "", 0, 0, false},
		{"plain text", `ls -la`, false, "", 0, 0, false},
		{"empty", ``, false, "", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctl, ok := parseControl([]byte(tt.msg))
			if ok != tt.wantCtl {
				t.Fatalf("control = %v, want %v", ok, tt.wantCtl)
			}
			if !ok {
				return
			}
			if ctl.kind != tt.wantKind || (ctl.err != "") != tt.wantErr {
				t.Errorf("got kind %q err %q, want %q, error %v", ctl.kind, ctl.err, tt.wantKind, tt.wantErr)
			}
			if !tt.wantErr && (ctl.rows != tt.wantRows || ctl.cols != tt.wantCols) {
				t.Errorf("got %dx%d, want %dx%d", ctl.rows, ctl.cols, tt.wantRows, tt.wantCols)
			}
		})
	}
}

// FuzzParseControl: whatever a client sends, parsing never panics, a
// control message is a JSON object of a known type, and a valid resize
// stays within bounds.
func FuzzParseControl(f *testing.F) {
	for _, s := range []string{`{"type":"ping"}`, `{"type":"resize","rows":24,"cols":80}`, `{"type":"resize","rows":1e9}`, `{`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		ctl, ok := parseControl(msg)
		if !ok {
			return
		}
		var probe struct{ Type string }
		if json.Unmarshal(msg, &probe) != nil || (probe.Type != TypePing && probe.Type != TypeResize) {
			t.Fatalf("%q taken as a control message", msg)
		}
		if ctl.kind == TypeResize && ctl.err == "" && (ctl.rows < MinSize || ctl.rows > MaxSize || ctl.cols < MinSize || ctl.cols > MaxSize) {
			t.Fatalf("%q: resize to %dx%d accepted", msg, ctl.rows, ctl.cols)
		}
	})
}

func TestFramesEncode(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"exit", encode(Exit{Type: TypeExit, Code: 3}), `{"type":"exit","code":3}`},
		{"error", errorFrame(CodeBadRequest, "no"), `{"type":"error","code":"bad_request","message":"no"}`},
		{"resync", encode(Resync{Type: TypeResync, Skipped: 10, Offset: 99}), `{"type":"resync","skipped":10,"offset":99}`},
		{"heartbeat", frameHeartbeat, `{"type":"heartbeat"}`},
		{"pong", framePong, `{"type":"pong"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Errorf("got %s, want %s", tt.got, tt.want)
			}
		})
	}
}
