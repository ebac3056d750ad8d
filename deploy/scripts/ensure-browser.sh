#!/usr/bin/env bash
# ensure-browser.sh: makes sure the browser tests and the UI benchmark can run:
# Debian's chromium at /usr/bin/chromium (playwright-core drives it; it downloads
# no browser) and ss (iproute2: the chat restart test finds chat by its port),
# installed with apt-get when missing and running as root; and Node 20 or newer
# with npm (checked, not installed: Debian's own nodejs is older). Otherwise it
# says what to install and fails.
set -euo pipefail

CHROMIUM=${E2E_CHROMIUM:-/usr/bin/chromium}

missing=()
[[ -x $CHROMIUM ]] || missing+=(chromium)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
if ((${#missing[@]} > 0)); then
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		printf 'ensure-browser: not installed: %s (%s). Install them, e.g.:\n' "${missing[*]}" "$CHROMIUM" >&2
		printf '  sudo apt-get update && sudo apt-get install -y %s\n' "${missing[*]}" >&2
		exit 1
	fi
	printf 'ensure-browser: installing %s with apt-get\n' "${missing[*]}" >&2
	apt-get update </dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" </dev/null
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "ensure-browser: node and npm are needed (Node 20 or newer)" >&2
	exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if ((major < 20)); then
	echo "ensure-browser: node $(node --version) is too old: Node 20 or newer is needed" >&2
	exit 1
fi
