#!/usr/bin/env bash
# test-real-agents.sh: run the provider tests against the REAL agent CLIs, offline:
# Claude Code (agent-sdk) and `codex app-server` (app-server).
#
#   deploy/scripts/test-real-agents.sh [go test flags...]
#
# Installs the pinned @anthropic-ai/claude-code and @openai/codex from npm into cache
# directories outside the repository when they are missing, builds and starts
# services/chat/cmd/fakemodel (a scripted fake of the Anthropic Messages API and the
# OpenAI Responses API on 127.0.0.1), then runs
#   go test -tags realcli -count=1 -run RealCLI ./internal/agent/claude/ ./internal/agent/codex/ ./internal/app/
# in services/chat with CLAUDE_BIN, CODEX_BIN and FAKEMODEL_URL set (./internal/app/: the CLI
# session routes on files the CLIs write, continued with the same CLIs; it needs the PostgreSQL
# and Redis of the other chat tests). The npm registry is needed only for the first install;
# the tests themselves make no outbound connection.
#
# Environment:
#   CLAUDE_CODE_VERSION  the Claude Code version to install (default: agent-versions.env)
#   CLAUDE_CODE_CACHE    its install directory (default ~/.cache/svc-code/claude-code-VERSION)
#   CLAUDE_BIN           use this claude binary instead of installing one
#   CODEX_VERSION        the @openai/codex version to install (default: agent-versions.env)
#   CODEX_CACHE          its install directory (default ~/.cache/svc-code/codex-VERSION)
#   CODEX_BIN            use this codex binary instead of installing one
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
# The pins, shared with install-agents.sh (make agents): read, not sourced; the environment wins.
while IFS='=' read -r key value; do
	case $key in
	CLAUDE_CODE_VERSION | CODEX_VERSION) if [[ -z ${!key:-} ]]; then printf -v "$key" '%s' "$value"; fi ;;
	esac
done <"$ROOT/deploy/scripts/agent-versions.env"
readonly VERSION=$CLAUDE_CODE_VERSION
readonly CACHE=${CLAUDE_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-code/claude-code-$VERSION}
readonly CODEX_VERSION
readonly CODEX_CACHE=${CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-code/codex-$CODEX_VERSION}

log() { printf 'test-real-agents: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# native_bin: the platform binary npm put under $CACHE (an optional dependency of the
# package), or the copy its postinstall makes; prints nothing when there is none.
native_bin() {
	local arch libc=""
	case $(uname -m) in
	x86_64 | amd64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) arch=$(uname -m) ;;
	esac
	if ldd --version 2>&1 | grep -qi musl; then libc=-musl; fi
	local c
	for c in "$CACHE/node_modules/@anthropic-ai/claude-code-linux-$arch$libc/claude" \
		"$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe"; do
		if [[ -x $c ]]; then
			printf '%s\n' "$c"
			return
		fi
	done
}

# cli_version BIN: the version BIN reports, run with a throwaway HOME.
cli_version() {
	local home out
	home=$(mktemp -d)
	out=$(HOME=$home timeout 60 "$1" --version 2>/dev/null || true)
	rm -rf "$home"
	printf '%s\n' "${out%% *}"
}

if [[ -n ${CLAUDE_BIN:-} ]]; then
	[[ -x $CLAUDE_BIN ]] || die "CLAUDE_BIN=$CLAUDE_BIN is not an executable file"
	BIN=$CLAUDE_BIN
else
	BIN=$(native_bin)
	if [[ -z $BIN || $(cli_version "$BIN") != "$VERSION" ]]; then
		command -v npm >/dev/null || die "npm is needed to install @anthropic-ai/claude-code@$VERSION (apt-get install -y npm)"
		log "installing @anthropic-ai/claude-code@$VERSION into $CACHE"
		rm -rf "$CACHE"
		mkdir -p "$CACHE"
		# The package wants node >= 22 but ships a native binary that does not use node.
		npm install --prefix "$CACHE" --no-audit --no-fund --engine-strict=false \
			"@anthropic-ai/claude-code@$VERSION" >&2
		BIN=$(native_bin)
		[[ -n $BIN ]] || die "npm installed no Claude Code binary for $(uname -m) under $CACHE"
	fi
fi
GOT=$(cli_version "$BIN")
[[ -n $GOT ]] || die "$BIN --version failed"
[[ $GOT == "$VERSION" || -n ${CLAUDE_BIN:-} ]] || die "$BIN reports $GOT, want $VERSION"
log "Claude Code $GOT at $BIN"

# codex_bin: the native codex binary npm put under $CODEX_CACHE (the optional
# dependency @openai/codex-linux-ARCH); prints nothing when there is none.
codex_bin() {
	local triple
	case $(uname -m) in
	x86_64 | amd64) triple=x64/vendor/x86_64-unknown-linux-musl ;;
	aarch64 | arm64) triple=arm64/vendor/aarch64-unknown-linux-musl ;;
	*) return ;;
	esac
	local c="$CODEX_CACHE/node_modules/@openai/codex-linux-${triple}/bin/codex"
	if [[ -x $c ]]; then
		printf '%s\n' "$c"
	fi
}

# codex_version BIN: the version BIN reports ("codex-cli 0.169.0"), with a throwaway home.
codex_version() {
	local home out
	home=$(mktemp -d)
	out=$(HOME=$home CODEX_HOME=$home timeout 60 "$1" --version 2>/dev/null || true)
	rm -rf "$home"
	printf '%s\n' "${out##* }"
}

if [[ -n ${CODEX_BIN:-} ]]; then
	[[ -x $CODEX_BIN ]] || die "CODEX_BIN=$CODEX_BIN is not an executable file"
	CBIN=$CODEX_BIN
else
	CBIN=$(codex_bin)
	if [[ -z $CBIN || $(codex_version "$CBIN") != "$CODEX_VERSION" ]]; then
		command -v npm >/dev/null || die "npm is needed to install @openai/codex@$CODEX_VERSION (apt-get install -y npm)"
		log "installing @openai/codex@$CODEX_VERSION into $CODEX_CACHE"
		rm -rf "$CODEX_CACHE"
		mkdir -p "$CODEX_CACHE"
		npm install --prefix "$CODEX_CACHE" --no-audit --no-fund "@openai/codex@$CODEX_VERSION" >&2
		CBIN=$(codex_bin)
		[[ -n $CBIN ]] || die "npm installed no codex binary for $(uname -m) under $CODEX_CACHE"
	fi
fi
CGOT=$(codex_version "$CBIN")
[[ -n $CGOT ]] || die "$CBIN --version failed"
[[ $CGOT == "$CODEX_VERSION" || -n ${CODEX_BIN:-} ]] || die "$CBIN reports $CGOT, want $CODEX_VERSION"
log "codex $CGOT at $CBIN"

WORK=$(mktemp -d)
FAKE_PID=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [[ -n $FAKE_PID ]]; then
		kill "$FAKE_PID" 2>/dev/null || true
		wait "$FAKE_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

cd "$ROOT/services/chat"
go build -o "$WORK/fakemodel" ./cmd/fakemodel
"$WORK/fakemodel" -log "$WORK/requests.jsonl" >"$WORK/url" 2>"$WORK/fakemodel.log" &
FAKE_PID=$!
URL=""
for _ in $(seq 100); do
	URL=$(head -n 1 "$WORK/url" 2>/dev/null || true)
	[[ -n $URL ]] && break
	kill -0 "$FAKE_PID" 2>/dev/null || die "fakemodel exited: $(cat "$WORK/fakemodel.log")"
	sleep 0.1
done
[[ -n $URL ]] || die "fakemodel printed no address within 10 s"
log "fake model at $URL"

status=0
CLAUDE_BIN=$BIN CODEX_BIN=$CBIN FAKEMODEL_URL=$URL \
	go test -tags realcli -count=1 -run RealCLI -v "$@" ./internal/agent/claude/ ./internal/agent/codex/ ./internal/app/ || status=$?
log "fake model served $(wc -l <"$WORK/requests.jsonl") requests"
if ((status != 0)); then
	log "fake model log:"
	cat "$WORK/fakemodel.log" >&2
fi
exit "$status"
