// Package agent holds the provider-neutral contract between the chat service
// and the coding-agent processes it runs: the Provider interface (one warm
// agent process per chat session, kept between turns), the events a provider
// reports (agent messages passed through as raw JSON, raw output and stderr
// lines, permission requests and their retirement, compaction progress, turn
// start and end, process start and exit), the unbounded Stream that carries
// them, and the capability flags of a provider.
//
// Implementations live in subpackages, one per provider: claude runs the
// Claude Code CLI ("agent-sdk"), codex runs `codex app-server`
// ("app-server"). The chat service consumes only this package.
//
// A provider never drops what its agent printed: every stdout line becomes at
// least one event, lines that are not JSON objects included (RawOutput), and
// unknown message kinds and fields are passed through untouched (Message.Raw).
package agent
