// Package codextest holds test helpers for the app-server provider and its
// fake: the recorded Codex transcripts (copied from
// shared/protocols/transcripts/codex, golden data), a loader for them, and
// BuildFake, which compiles cmd/fakecodex for a test binary.
//
// Only tests import it.
package codextest

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent/agenttest"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
)

//go:embed testdata/transcripts/*.jsonl
var transcripts embed.FS

// Names lists the transcripts, without the .jsonl suffix, sorted.
func Names() []string {
	entries, err := fs.ReadDir(transcripts, "testdata/transcripts")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".jsonl"))
	}
	sort.Strings(names)
	return names
}

// Load reads the transcript name (e.g. "shell_untrusted"); the line format
// is the Claude transcripts' one.
func Load(name string) ([]claudetest.Line, error) {
	b, err := transcripts.ReadFile(path.Join("testdata/transcripts", name+".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", name, err)
	}
	return claudetest.ParseTranscript(b)
}

// BuildFake compiles cmd/fakecodex into dir with the go tool on PATH and
// returns the binary's path. Call it once per test binary.
func BuildFake(ctx context.Context, dir string) (string, error) {
	return agenttest.BuildFake(ctx, dir, "fakecodex")
}

// MainWithFake is a TestMain for packages that drive the fake: see
// agenttest.MainWithFake.
func MainWithFake(m *testing.M, bin *string) {
	agenttest.MainWithFake(m, "fakecodex", bin)
}

// RealConfig is shared/protocols/real-cli.md §4's config.toml for the
// real Codex CLI (the opt-in real-agent tests): the fake model server (its
// URL in place of %s) as the provider, no retries, and the startup plugin
// sync switched off.
const RealConfig = `model = "mock-model"
model_provider = "mock_provider"
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[model_providers.mock_provider]
name = "Fake loopback provider"
base_url = "%s/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
tool_suggest = false
`
