#!/usr/bin/env bash
# ensure-tools.sh: makes sure the programs the tests run are installed: git (the
# shadow journal), curl (shadow-query), shellcheck (the helpers' scripts are
# checked by the tests), ripgrep (the search route's fast path; the Go walk is
# tested either way), and psql and redis-server (deploy/e2e runs make run's
# scripts, which provision with psql and start a Redis of their own).
#
#   deploy/scripts/ensure-tools.sh           install the missing ones with apt-get
#                                             (as root), else say what to install
#   deploy/scripts/ensure-tools.sh --check   only check (make test does, first)
set -euo pipefail

CHECK_ONLY=false
case ${1:-} in
'') ;;
--check) CHECK_ONLY=true ;;
*)
	echo "usage: ensure-tools.sh [--check]" >&2
	exit 2
	;;
esac

declare -A package=([git]=git [curl]=curl [shellcheck]=shellcheck [rg]=ripgrep
	[psql]=postgresql-client [redis-server]=redis-server [python3]=python3)
missing=()
for tool in git curl shellcheck rg psql redis-server python3; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("${package[$tool]}")
done
((${#missing[@]} == 0)) && exit 0

if $CHECK_ONLY || [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	printf 'ensure-tools: the tests need programs that are not installed: %s. Install them:\n' "${missing[*]}" >&2
	printf '  sudo apt-get update && sudo apt-get install -y %s\n' "${missing[*]}" >&2
	printf '  (or, as root: bash deploy/scripts/ensure-tools.sh)\n' >&2
	exit 1
fi
printf 'ensure-tools: installing %s with apt-get\n' "${missing[*]}" >&2
apt-get update </dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" </dev/null
