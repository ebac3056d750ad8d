package claude

import (
	"slices"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

func TestArgs(t *testing.T) {
	base := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json"}
	tests := []struct {
		name   string
		launch Launch
		want   []string
	}{
		{
			name:   "defaults",
			launch: Launch{},
			want:   append(slices.Clone(base), "--permission-prompt-tool=stdio", "--permission-mode=default"),
		},
		{
			name:   "model and resume",
			launch: Launch{Model: "claude-sonnet-4-5", PermissionMode: ModeAcceptEdits, Resume: "048421db-1752-4580-a33a-b0a11100d863"},
			want: append(slices.Clone(base), "--model=claude-sonnet-4-5", "--permission-prompt-tool=stdio",
				"--permission-mode=acceptEdits", "--resume=048421db-1752-4580-a33a-b0a11100d863"),
		},
		{
			name:   "bypass adds the allow flag",
			launch: Launch{PermissionMode: ModeBypassPermissions, ExtraArgs: []string{"--setting-sources="}},
			want: append(slices.Clone(base), "--permission-prompt-tool=stdio", "--permission-mode=bypassPermissions",
				"--allow-dangerously-skip-permissions", "--setting-sources="),
		},
		{
			name:   "a fork resumes as a new session",
			launch: Launch{Resume: "048421db-1752-4580-a33a-b0a11100d863", ForkSession: true},
			want: append(slices.Clone(base), "--permission-prompt-tool=stdio", "--permission-mode=default",
				"--resume=048421db-1752-4580-a33a-b0a11100d863", "--fork-session"),
		},
		{
			name:   "fork without a session to resume is a plain start",
			launch: Launch{ForkSession: true},
			want:   append(slices.Clone(base), "--permission-prompt-tool=stdio", "--permission-mode=default"),
		},
		{
			name:   "a resume id starting with a dash stays one token",
			launch: Launch{Resume: "-x"},
			want:   append(slices.Clone(base), "--permission-prompt-tool=stdio", "--permission-mode=default", "--resume=-x"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Args(tt.launch); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	base := []string{"PATH=/bin", "NODE_OPTIONS=--inspect", "CLAUDECODE=1", "DEBUG=*", "HOME=/root"}
	sdk := []string{"CLAUDE_CODE_ENTRYPOINT=sdk-ts", "CLAUDE_AGENT_SDK_VERSION=" + SDKVersion, "CLAUDE_CODE_SDK_READS_SESSION_STATE=1"}
	tests := []struct {
		name  string
		base  []string
		extra []string
		mode  string
		euid  int
		want  []string
	}{
		{
			name: "strips what the SDK strips",
			base: base, mode: ModeDefault, euid: 0,
			want: append([]string{"PATH=/bin", "HOME=/root"}, sdk...),
		},
		{
			name: "root in bypass gets IS_SANDBOX",
			base: base, extra: []string{"X=1"}, mode: ModeBypassPermissions, euid: 0,
			want: append(append([]string{"PATH=/bin", "HOME=/root"}, sdk...), "X=1", "IS_SANDBOX=1"),
		},
		{
			name: "not root: no IS_SANDBOX",
			base: base, mode: ModeBypassPermissions, euid: 1000,
			want: append([]string{"PATH=/bin", "HOME=/root"}, sdk...),
		},
		{
			name: "DEBUG kept with DEBUG_CLAUDE_AGENT_SDK",
			base: []string{"DEBUG=*", "DEBUG_CLAUDE_AGENT_SDK=1"}, mode: ModePlan, euid: 1000,
			want: append([]string{"DEBUG=*", "DEBUG_CLAUDE_AGENT_SDK=1"}, sdk...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Env(tt.base, tt.extra, tt.mode, tt.euid); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestTurnCostWithoutSinceLast: CLIs before 2.1.330 report only the
// cumulative total_cost_usd; the turn's cost is its growth, across resumed
// processes too, and the total itself when it restarts from zero.
func TestTurnCostWithoutSinceLast(t *testing.T) {
	p := New(Config{})
	defer p.Close()
	tests := []struct {
		total, known, want float64
		isKnown            bool
	}{
		{total: 0.3, want: 0.3},                              // first result: all of it
		{total: 0.5, want: 0.2},                              // growth
		{total: 0.9, known: 0.25, isKnown: true, want: 0.25}, // reported: kept
		{total: 0.1, want: 0.1},                              // a fresh session restarts the total
	}
	for i, tt := range tests {
		turn := agent.TurnEnded{TotalCostUSD: tt.total, CostUSD: tt.total}
		if tt.isKnown {
			turn.CostUSD = tt.known
		}
		p.noteCost(&turn, tt.isKnown)
		if diff := turn.CostUSD - tt.want; diff > 1e-12 || diff < -1e-12 {
			t.Errorf("result %d: cost %v, want %v", i, turn.CostUSD, tt.want)
		}
	}
}
