#!/usr/bin/env bash
# install-agents.sh: install the agent CLIs that chat drives, for this user only; this is
# what `make agents` does.
#
# Installs Claude Code (@anthropic-ai/claude-code) and Codex (@openai/codex) at the
# versions of deploy/scripts/agent-versions.env (the ones make test-real-agents tests),
# with npm, into ~/.local/share/svc-code/agents/<name>-<version>/, and links
# ~/.local/bin/claude and ~/.local/bin/codex to their binaries. No root, no global npm
# install, no change to PATH or to shell start-up files; an existing ~/.local/bin/claude
# or codex that is not such a link is left as it is. Running it again installs only what
# is missing or of another version. make run puts ~/.local/bin on the services' PATH
# (after the rest), so chat finds the two programs; then sign them in (printed at the end).
#
# Environment:
#   CLAUDE_CODE_VERSION, CODEX_VERSION  other versions than the pinned ones
#   AGENTS_DIR                          install directory (default ~/.local/share/svc-code/agents)
#   BIN_DIR                             where the links go (default ~/.local/bin)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
log() { printf 'agents: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# The pins, read (not sourced) from agent-versions.env; the environment wins.
while IFS='=' read -r key value; do
	case $key in
	CLAUDE_CODE_VERSION | CODEX_VERSION) if [[ -z ${!key:-} ]]; then printf -v "$key" '%s' "$value"; fi ;;
	esac
done <"$ROOT/deploy/scripts/agent-versions.env"
for v in "$CLAUDE_CODE_VERSION" "$CODEX_VERSION"; do
	[[ $v =~ ^[0-9A-Za-z.+-]+$ ]] || die "version $v: want a version number"
done

AGENTS_DIR=${AGENTS_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/svc-code/agents}
BIN_DIR=${BIN_DIR:-$HOME/.local/bin}

case $(uname -m) in
x86_64 | amd64) ARCH=x64 RUST_ARCH=x86_64 ;;
aarch64 | arm64) ARCH=arm64 RUST_ARCH=aarch64 ;;
*) die "no Claude Code or Codex build for $(uname -m)" ;;
esac
LIBC=
if ldd --version 2>&1 | grep -qi musl; then LIBC=-musl; fi

# claude_bin DIR: the native Claude Code binary npm put under DIR, or nothing.
claude_bin() {
	local c
	for c in "$1/node_modules/@anthropic-ai/claude-code-linux-$ARCH$LIBC/claude" \
		"$1/node_modules/@anthropic-ai/claude-code/bin/claude.exe"; do
		if [[ -x $c ]]; then
			printf '%s\n' "$c"
			return
		fi
	done
}

# codex_bin DIR: the native codex binary npm put under DIR, or nothing.
codex_bin() {
	local c="$1/node_modules/@openai/codex-linux-$ARCH/vendor/$RUST_ARCH-unknown-linux-musl/bin/codex"
	if [[ -x $c ]]; then printf '%s\n' "$c"; fi
}

# version_of BIN: the last word of `BIN --version` ("2.1.330 (Claude Code)" gives the
# first), run with a throwaway HOME so that nothing is written to the user's.
version_of() {
	local home out
	home=$(mktemp -d)
	out=$(HOME=$home CODEX_HOME=$home timeout 60 "$1" --version 2>/dev/null || true)
	rm -rf "$home"
	case $out in
	codex-cli\ *) printf '%s\n' "${out##* }" ;;
	*) printf '%s\n' "${out%% *}" ;;
	esac
}

# install NAME PACKAGE VERSION FINDER: prints the binary, installing it when needed.
install() {
	local name=$1 pkg=$2 version=$3 finder=$4 dir bin
	dir=$AGENTS_DIR/$name-$version
	bin=$("$finder" "$dir")
	if [[ -n $bin && $(version_of "$bin") == "$version" ]]; then
		log "$pkg@$version is installed in $dir"
	else
		command -v npm >/dev/null 2>&1 ||
			die "npm is needed to install $pkg@$version: sudo apt-get install -y npm"
		log "installing $pkg@$version into $dir"
		rm -rf "$dir"
		mkdir -p "$dir"
		# Claude Code's package asks for a newer node than it needs: its binary is native.
		npm install --prefix "$dir" --no-audit --no-fund --engine-strict=false "$pkg@$version" >&2
		bin=$("$finder" "$dir")
		[[ -n $bin ]] || die "npm installed no $name binary for $(uname -m) under $dir"
		local got
		got=$(version_of "$bin")
		[[ $got == "$version" ]] || die "$bin reports version ${got:-none}, want $version"
	fi
	printf '%s\n' "$bin"
}

# link NAME TARGET: BIN_DIR/NAME -> TARGET, unless BIN_DIR/NAME is something of the user's.
link() {
	local name=$1 target=$2 at=$BIN_DIR/$1
	mkdir -p "$BIN_DIR"
	if [[ -e $at || -L $at ]] && [[ ! -L $at || $(readlink "$at") != "$AGENTS_DIR"/* ]]; then
		log "$at exists and is not ours: left as it is; $name is $target"
		return
	fi
	ln -sfn "$target" "$at"
	log "$at -> $target"
}

claude=$(install claude-code @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION" claude_bin)
codex=$(install codex @openai/codex "$CODEX_VERSION" codex_bin)
link claude "$claude"
link codex "$codex"

cat <<EOM

  Claude Code $CLAUDE_CODE_VERSION and Codex $CODEX_VERSION are installed for $(id -un).

  Sign them in once, as this user (chat runs them with your HOME, so their sign-in is
  yours):
    Claude Code  $BIN_DIR/claude, then /login in it (a Claude subscription or an
                 Anthropic Console account); or set ANTHROPIC_API_KEY for make run
    Codex        $BIN_DIR/codex login (ChatGPT, in a browser), or
                 $BIN_DIR/codex login --device-auth (no browser here), or
                 printenv OPENAI_API_KEY | $BIN_DIR/codex login --with-api-key
                 check with: $BIN_DIR/codex login status
  make run finds them in $BIN_DIR; elsewhere, set the path in the app's provider
  settings (PUT /api/app/provider-path/claude or /codex).

EOM
