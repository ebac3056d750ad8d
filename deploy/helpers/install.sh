#!/usr/bin/env bash
# install.sh: install svc-code's companion helpers for the current user.
#
#   shadow-git            -> ~/.local/bin/shadow-git
#   shadow-query          -> ~/.local/bin/shadow-query
#   shadow-git-helper.md  -> <agent config dir>/agents/shadow-git-helper.md
#                            (<agent config dir> is $CLAUDE_CONFIG_DIR, else ~/.claude)
#
# Everything is user-scoped: no elevated rights, no PATH edits, no shell-rc
# changes. ~/.local/bin is created but not added to PATH. On Windows (Git
# Bash, MSYS2, Cygwin) each CLI also gets a .cmd wrapper that runs it with
# this bash.
set -euo pipefail

readonly PROG=install.sh

usage() {
	cat <<'USAGE'
Usage: install.sh [--update | --force] [--uninstall] [--dry-run] [-h | --help]

Installs shadow-git and shadow-query into ~/.local/bin and the agent template
shadow-git-helper.md into $CLAUDE_CONFIG_DIR/agents (default ~/.claude/agents).

  (no flag)         install, skipping files that are already present
  --update          overwrite installed files with the packaged version
  --force           the same as --update
  --uninstall       remove the installed files (and .cmd wrappers)
  --dry-run         print what would be done, change nothing
  -h, --help        this help

Nothing outside your home directory is touched, and PATH is not changed:
call ~/.local/bin/shadow-git by its full path if ~/.local/bin is not on it.
USAGE
}

mode=install
dry_run=false
while (($# > 0)); do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--update | --force) mode=update ;;
	--uninstall) mode=uninstall ;;
	--dry-run) dry_run=true ;;
	*)
		printf '%s: unknown argument %s (see --help)\n' "$PROG" "$1" >&2
		exit 2
		;;
	esac
	shift
done

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin_dir=$HOME/.local/bin
agents_dir=${CLAUDE_CONFIG_DIR:-$HOME/.claude}/agents

windows=false
case $(uname -s) in
MINGW* | MSYS* | CYGWIN*) windows=true ;;
esac

say() { printf '%s\n' "$*"; }

# run CMD...: runs it, or prints it under --dry-run.
run() {
	if $dry_run; then
		say "would run: $*"
	else
		"$@"
	fi
}

# place NAME DEST MODE: installs the packaged file NAME at DEST.
place() {
	local name=$1 dest=$2 perm=$3
	if [[ -e $dest && $mode == install ]]; then
		say "skip $dest (present; --update replaces it)"
		return
	fi
	run mkdir -p "$(dirname "$dest")"
	local tmp=$dest.tmp.$$
	run cp "$src/$name" "$tmp"
	run chmod "$perm" "$tmp"
	run mv -f "$tmp" "$dest"
	say "installed $dest"
}

# wrapper DEST: writes DEST.cmd, which runs DEST with the bash running this script.
wrapper() {
	local dest=$1 bash_path
	bash_path=$(command -v bash)
	if command -v cygpath >/dev/null; then
		bash_path=$(cygpath -w "$bash_path")
	fi
	if [[ -e $dest.cmd && $mode == install ]]; then
		say "skip $dest.cmd (present; --update replaces it)"
		return
	fi
	if $dry_run; then
		say "would write $dest.cmd"
		return
	fi
	printf '@echo off\r\n"%s" "%%~dpn0" %%*\r\n' "$bash_path" >"$dest.cmd"
	say "installed $dest.cmd"
}

remove() {
	local dest=$1
	if [[ -e $dest || -L $dest ]]; then
		run rm -f "$dest"
		$dry_run || say "removed $dest"
	fi
}

if [[ $mode == uninstall ]]; then
	for cli in shadow-git shadow-query; do
		remove "$bin_dir/$cli"
		remove "$bin_dir/$cli.cmd"
	done
	remove "$agents_dir/shadow-git-helper.md"
	exit 0
fi

for cli in shadow-git shadow-query; do
	place "$cli" "$bin_dir/$cli" 0755
	if $windows; then
		wrapper "$bin_dir/$cli"
	fi
done
place shadow-git-helper.md "$agents_dir/shadow-git-helper.md" 0644
case ":$PATH:" in
*":$bin_dir:"*) ;;
*) say "note: $bin_dir is not on PATH; call the helpers by their full path" ;;
esac
