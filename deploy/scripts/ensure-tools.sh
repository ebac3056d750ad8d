#!/usr/bin/env bash
# ensure-tools.sh: makes sure the programs the tests run are installed: git (the
# shadow journal), curl (shadow-query), shellcheck (the helpers' scripts are
# checked by the tests) and ripgrep (the search route's fast path; the Go walk is
# tested either way). Missing ones are installed with apt-get when running as
# root, otherwise it says what to install and fails.
set -euo pipefail

declare -A package=([git]=git [curl]=curl [shellcheck]=shellcheck [rg]=ripgrep)
missing=()
for tool in git curl shellcheck rg; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("${package[$tool]}")
done
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	printf 'ensure-tools: not installed: %s. Install them, e.g.:\n' "${missing[*]}" >&2
	printf '  sudo apt-get update && sudo apt-get install -y %s\n' "${missing[*]}" >&2
	exit 1
fi
printf 'ensure-tools: installing %s with apt-get\n' "${missing[*]}" >&2
apt-get update </dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" </dev/null
