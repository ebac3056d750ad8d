#!/usr/bin/env bash
# run.sh: run svc-code on this machine; this is what `make run` does.
#
# Makes sure PostgreSQL and Redis are up (ensure-deps.sh), provisions the database
# (provision.sh), builds the five binaries into bin/, starts chat, terminal, shadow and
# analytics, waits until each answers its -healthcheck, then starts the gateway and waits
# for its /health. Every service's output is shown here, prefixed with its name, and kept
# in $SVC_CODE_HOME/logs/<service>.log.
#
# Ctrl-C (or SIGTERM) stops every service: SIGTERM, up to 10 s, then SIGKILL.
# If one service exits, the others are stopped and this script exits non-zero.
#
# Environment: everything the services read (see their READMEs), notably SVC_ADDR,
# SVC_CODE_PASSWORD, SVC_CODE_HOME, DATABASE_URL, REDIS_URL; and
#   HEALTH_TIMEOUT  seconds each service gets to become healthy (default 30)
#   RUN_RESTART     backends (chat, terminal, shadow, analytics; space or comma
#                   separated) started again when they exit, instead of stopping
#                   everything: for tests that kill a service and bring it back
#                   (web/e2e). Empty by default.
set -euo pipefail

if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
	echo "run: needs bash 5.1 or newer (wait -n -p)" >&2
	exit 1
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

readonly BACKENDS=(chat terminal shadow analytics)
readonly STOP_TIMEOUT=10
HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-30}
RESTART=${RUN_RESTART:-}
RESTART=" ${RESTART//,/ } "
for name in $RESTART; do
	if [[ " ${BACKENDS[*]} " != *" $name "* ]]; then
		echo "run: RUN_RESTART: \"$name\" is not one of: ${BACKENDS[*]}" >&2
		exit 1
	fi
done

log() { printf 'run: %s\n' "$*" >&2; }

# --- dependencies and environment ----------------------------------------------------

bash deploy/scripts/ensure-deps.sh
bash deploy/scripts/provision.sh

export SVC_CODE_HOME=${SVC_CODE_HOME:-$HOME/.svc-code}

# load_env FILE: exports the DATABASE_URL lines of provision.sh's env file (read, not sourced).
load_env() {
	local key value
	while IFS='=' read -r key value; do
		case $key in
		DATABASE_URL | READONLY_DATABASE_URL) export "$key=$value" ;;
		esac
	done <"$1"
}
if [[ -z ${DATABASE_URL:-} ]]; then
	load_env "$SVC_CODE_HOME/postgres.env"
fi

export SVC_ADDR=${SVC_ADDR:-127.0.0.1:8765}
export CHAT_ADDR=${CHAT_ADDR:-127.0.0.1:8771}
export TERMINAL_ADDR=${TERMINAL_ADDR:-127.0.0.1:8772}
export SHADOW_ADDR=${SHADOW_ADDR:-127.0.0.1:8773}
export ANALYTICS_ADDR=${ANALYTICS_ADDR:-127.0.0.1:8774}
export CHAT_URL=${CHAT_URL:-http://$CHAT_ADDR}
export TERMINAL_URL=${TERMINAL_URL:-http://$TERMINAL_ADDR}
export SHADOW_URL=${SHADOW_URL:-http://$SHADOW_ADDR}
export ANALYTICS_URL=${ANALYTICS_URL:-http://$ANALYTICS_ADDR}

# --- build ---------------------------------------------------------------------------

log "building into bin/"
mkdir -p bin
go build -o bin/ \
	./services/gateway/cmd/gateway \
	./services/chat/cmd/chat \
	./services/terminal/cmd/terminal \
	./services/shadow/cmd/shadow \
	./services/analytics/cmd/analytics

if [[ ! -d $SVC_CODE_HOME ]]; then
	mkdir -p "$SVC_CODE_HOME"
	chmod 0700 "$SVC_CODE_HOME"
fi
LOG_DIR=$SVC_CODE_HOME/logs
mkdir -p "$LOG_DIR"

# --- children ------------------------------------------------------------------------

declare -A PIDS=() # service name -> pid
STARTED=()         # service names in start order
LOG_PIDS=()        # the log pipelines

# start NAME [-a]: runs bin/NAME in the background; its output goes to the terminal,
# prefixed with the name, and to LOG_DIR/NAME.log (appended to with -a).
start() {
	local name=$1 prefix fd
	prefix=$(printf '%-9s| ' "$name")
	# The log pipeline ignores INT and TERM, so that a Ctrl-C does not close the pipe
	# under a service that is still writing its shutdown lines.
	exec {fd}> >(
		trap '' INT TERM
		tee ${2:+"$2"} "$LOG_DIR/$name.log" | sed -u "s/^/$prefix/"
	)
	LOG_PIDS+=("$!")
	"bin/$name" >&"$fd" 2>&1 &
	PIDS[$name]=$!
	STARTED+=("$name")
	exec {fd}>&-
}

alive() { kill -0 "$1" 2>/dev/null; }

# stop_all: SIGTERM to every service still running (gateway first), up to
# STOP_TIMEOUT seconds for them to exit, then SIGKILL. Safe to call more than once.
stop_all() {
	local name pid deadline i order=()
	((${#PIDS[@]} > 0)) || return 0
	for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do order+=("${STARTED[i]}"); done
	for name in "${order[@]}"; do
		pid=${PIDS[$name]}
		if alive "$pid"; then
			log "stopping $name"
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	deadline=$((SECONDS + STOP_TIMEOUT))
	for name in "${order[@]}"; do
		pid=${PIDS[$name]}
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
		if alive "$pid"; then
			log "$name did not stop within ${STOP_TIMEOUT}s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	PIDS=()
	wait 2>/dev/null || true
	# Let the log pipelines print the services' last lines.
	deadline=$((SECONDS + 2))
	for pid in "${LOG_PIDS[@]}"; do
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
	done
}

# shellcheck disable=SC2317 # called from traps
on_signal() {
	local code=$1
	trap '' INT TERM
	echo >&2
	log "stopping svc-code"
	stop_all
	exit "$code"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap stop_all EXIT

fail() {
	log "$*"
	trap '' INT TERM
	stop_all
	exit 1
}

show_log() {
	log "last lines of $LOG_DIR/$1.log:"
	tail -n 40 "$LOG_DIR/$1.log" | sed "s/^/    /" >&2 || true
}

# wait_healthy NAME CHECK...: waits until CHECK succeeds, while NAME keeps running.
wait_healthy() {
	local name=$1 pid=${PIDS[$1]} deadline=$((SECONDS + HEALTH_TIMEOUT)) status
	shift
	until "$@" >/dev/null 2>&1; do
		if ! alive "$pid"; then
			status=0
			wait "$pid" 2>/dev/null || status=$?
			show_log "$name"
			fail "$name exited during startup (status $status)"
		fi
		if ((SECONDS >= deadline)); then
			show_log "$name"
			fail "$name was not healthy within ${HEALTH_TIMEOUT}s"
		fi
		sleep 0.5
	done
}

# local_url ADDR: a URL to reach a server listening on ADDR (host:port) from here.
local_url() {
	local host=${1%:*} port=${1##*:}
	case $host in '' | 0.0.0.0 | '[::]' | '::') host=127.0.0.1 ;; esac
	printf 'http://%s:%s' "$host" "$port"
}

# shellcheck disable=SC2317 # called through wait_healthy
# http_ok URL: the URL answers 200 (curl, else bash's /dev/tcp for http://host:port/path).
http_ok() {
	local url=$1
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 3 "$url"
		return
	fi
	local rest=${url#http://} hostport path host
	hostport=${rest%%/*}
	path=/${rest#*/}
	host=${hostport%:*}
	host=${host#[}
	host=${host%]}
	# A subshell, so that a failed connection cannot end this script.
	(
		exec 3<>"/dev/tcp/$host/${hostport##*:}"
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hostport" >&3
		IFS= read -r -t 3 status <&3
		[[ $status == "HTTP/1."[01]" 200"* ]]
	)
}

# --- start ---------------------------------------------------------------------------

for name in "${BACKENDS[@]}"; do
	start "$name"
done
for name in "${BACKENDS[@]}"; do
	wait_healthy "$name" timeout 5 "bin/$name" -healthcheck
	log "$name is healthy"
done

start gateway
BASE_URL=$(local_url "$SVC_ADDR")
wait_healthy gateway http_ok "$BASE_URL/health"

if [[ -n ${SVC_CONFIG:-} ]]; then
	CONFIG=$SVC_CONFIG
elif [[ ${XDG_CONFIG_HOME:-} == /* ]]; then
	CONFIG=$XDG_CONFIG_HOME/svc-code/config.yaml
else
	CONFIG=$HOME/.config/svc-code/config.yaml
fi
CONFIG_SHOWN=${CONFIG/#"$HOME"\//\~/}

cat <<EOF

  svc-code is running at $BASE_URL

  Password  the first start generates one and the gateway prints it once, above.
            To choose it on a first start: SVC_CODE_PASSWORD=... make run
            To change it later: make passwd
  API       TOKEN=\$(sed -n 's/^api_token: //p' $CONFIG_SHOWN)
            curl -s -H @- $BASE_URL/api/info <<<"Authorization: Bearer \$TOKEN"
  Logs      $LOG_DIR/<service>.log
  Stop      Ctrl-C

EOF

# --- supervise -----------------------------------------------------------------------

pid_name() {
	local name
	for name in "${!PIDS[@]}"; do
		if [[ ${PIDS[$name]} == "$1" ]]; then
			printf '%s' "$name"
			return
		fi
	done
	printf 'pid %s' "$1"
}

# A trapped signal interrupts wait; on_signal then ends the script.
while true; do
	status=0
	wait -n -p exited "${PIDS[@]}" || status=$?
	name=$(pid_name "$exited")
	if [[ $RESTART == *" $name "* ]]; then
		log "$name exited (status $status); starting it again (RUN_RESTART)"
		start "$name" -a
		wait_healthy "$name" timeout 5 "bin/$name" -healthcheck
		log "$name is healthy"
		continue
	fi
	log "$name exited (status $status); stopping the others"
	fail "svc-code stopped because $name exited"
done
