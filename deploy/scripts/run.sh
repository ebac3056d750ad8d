#!/usr/bin/env bash
# run.sh: run svc-code on this machine; this is what `make run` does.
#
# Makes sure PostgreSQL is up and redis-server installed (ensure-deps.sh), provisions the
# data home's database (provision.sh), builds the five binaries into bin/, starts a
# password-protected Redis of the data home's own, then chat, terminal, shadow and
# analytics, waits until each answers its -healthcheck, then starts the gateway and waits
# for its /health. Every service's output is shown here, prefixed with its name, and kept
# in <data home>/logs/<service>.log; the previous runs' logs are kept as <service>.log.1
# (the last run) to .log.3.
#
# Host profiles: SVC_CODE_PROFILE=NAME runs an instance of its own beside the default one
# and other profiles: data home ~/.svc-code/profiles/NAME, config file
# ~/.config/svc-code/profiles/NAME/config.yaml, its own database (provision.sh), Redis
# (and key prefix svc-NAME:) and ports. On a profile's first start a free block of ports
# (8780, 8790, ...) is written to ~/.config/svc-code/profiles/NAME/ports.env; edit it to
# move them. The default instance reads ~/.config/svc-code/ports.env when it exists.
# Variables set in the environment win over the file.
#
# Redis: unless REDIS_URL is set, each data home runs its own redis-server on loopback
# (port SVC_REDIS_PORT), with a password generated on the first start and kept in
# <data home>/redis/ (mode 0700), and its data there (append-only file). A Redis the user
# already runs, and the tests' TEST_REDIS_URL, are not touched.
#
# The first password: when the gateway generates one, it is written to first-password
# beside the config file (mode 0600) and shown in the banner below, never in the logs.
#
# The services get only what they need: none of make test's TEST_* variables, no
# PROVISION_DATABASE_URL, the first password for the gateway alone, and a DATABASE_URL
# given here for chat, shadow and analytics alone (without one they read the data home's
# postgres.env).
#
# Ctrl-C (or SIGTERM, SIGHUP) is a requested stop: every service gets SIGTERM (the gateway
# first, Redis last), up to 10 s, then SIGKILL; the script exits 0. The services run in
# process groups of their own, so a Ctrl-C reaches this script alone and the stop is
# orderly. If a service exits by itself, the others are stopped and this script exits 1.
#
# Environment: everything the services read (see their READMEs), notably SVC_ADDR,
# CHAT_ADDR, TERMINAL_ADDR, SHADOW_ADDR, ANALYTICS_ADDR, SVC_CODE_PASSWORD, SVC_CODE_HOME,
# SVC_CODE_PROFILE, SVC_CONFIG, DATABASE_URL, REDIS_URL; and
#   SVC_REDIS_PORT  the port of the data home's Redis (default 8775)
#   HEALTH_TIMEOUT  seconds each service gets to become healthy (default 30)
#   SVC_BIN_DIR     where the binaries are built and run from (default bin/)
#   SVC_BUILD       false: do not build, run SVC_BIN_DIR's binaries as they are
#   RUN_RESTART     backends (chat, terminal, shadow, analytics; space or comma
#                   separated) started again when they exit, instead of stopping
#                   everything (the exited run's log becomes <service>.log.1): for
#                   tests that kill a service and bring it back (web/e2e). Empty by
#                   default.
set -euo pipefail

if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
	echo "run: needs bash 5.1 or newer (wait -n -p)" >&2
	exit 1
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

readonly BACKENDS=(chat terminal shadow analytics)
readonly STOP_TIMEOUT=10
readonly LOG_GENERATIONS=3
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
die() {
	log "$*"
	exit 1
}

# --- profile, data home, config file -------------------------------------------------

PROFILE=${SVC_CODE_PROFILE:-}
if [[ -n $PROFILE ]]; then
	# The rule of libs/profile and shadow-git: a plain name.
	if [[ ! $PROFILE =~ ^[A-Za-z0-9._-]{1,64}$ || $PROFILE == . || $PROFILE == .. ]]; then
		die "SVC_CODE_PROFILE=$PROFILE: want a plain name of letters, digits, '.', '_' or '-' (at most 64)"
	fi
fi
if [[ ${XDG_CONFIG_HOME:-} == /* ]]; then
	CONFIG_ROOT=$XDG_CONFIG_HOME/svc-code
else
	CONFIG_ROOT=$HOME/.config/svc-code
fi
CONFIG_DIR=$CONFIG_ROOT${PROFILE:+/profiles/$PROFILE}
CONFIG=${SVC_CONFIG:-$CONFIG_DIR/config.yaml}
PORTS_FILE=$CONFIG_DIR/ports.env
export SVC_CODE_HOME=${SVC_CODE_HOME:-$HOME/.svc-code${PROFILE:+/profiles/$PROFILE}}

# --- ports ---------------------------------------------------------------------------

readonly PORT_KEYS=(SVC_ADDR CHAT_ADDR TERMINAL_ADDR SHADOW_ADDR ANALYTICS_ADDR SVC_REDIS_PORT)

# read_ports FILE: exports the file's settings that the environment does not set.
read_ports() {
	local key value n=0
	while IFS='=' read -r key value; do
		n=$((n + 1))
		case $key in
		'' | '#'*) continue ;;
		SVC_ADDR | CHAT_ADDR | TERMINAL_ADDR | SHADOW_ADDR | ANALYTICS_ADDR | SVC_REDIS_PORT) ;;
		*) die "$1 line $n: unknown key ${key@Q}; the keys are ${PORT_KEYS[*]}" ;;
		esac
		[[ $value =~ ^[][A-Za-z0-9.:-]+$ ]] || die "$1 line $n: $key wants host:port (SVC_REDIS_PORT a port)"
		if [[ -z ${!key:-} ]]; then export "$key=$value"; fi
	done <"$1"
}

# port_busy PORT: something listens on 127.0.0.1:PORT.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# allocate_ports: writes PORTS_FILE with the first block of ten ports from 8780 on that no
# other profile's ports.env claims and that nothing listens on now.
allocate_ports() {
	local base p f claimed=() port free tmp
	for f in "$CONFIG_ROOT"/profiles/*/ports.env; do
		[[ -f $f ]] || continue
		port=$(sed -n 's/^SVC_ADDR=.*:\([0-9][0-9]*\)$/\1/p' "$f" | tail -n 1)
		[[ -n $port ]] && claimed+=("$port")
	done
	for ((base = 8780; base < 9780; base += 10)); do
		free=true
		for port in "${claimed[@]}"; do
			if ((port >= base && port < base + 10)); then free=false; fi
		done
		for ((p = base; p <= base + 5 && free; p++)); do
			if port_busy "$p"; then free=false; fi
		done
		$free || continue
		mkdir -p "$CONFIG_DIR"
		chmod 0700 "$CONFIG_DIR"
		tmp=$(mktemp "$CONFIG_DIR/.ports.env.XXXXXX")
		cat >"$tmp" <<EOF
# Ports of the svc-code profile $PROFILE, chosen on its first start by deploy/scripts/run.sh.
# Edit to move them; variables set in the environment win.
SVC_ADDR=127.0.0.1:$base
CHAT_ADDR=127.0.0.1:$((base + 1))
TERMINAL_ADDR=127.0.0.1:$((base + 2))
SHADOW_ADDR=127.0.0.1:$((base + 3))
ANALYTICS_ADDR=127.0.0.1:$((base + 4))
SVC_REDIS_PORT=$((base + 5))
EOF
		chmod 0644 "$tmp"
		mv -f "$tmp" "$PORTS_FILE"
		log "profile $PROFILE: ports $base to $((base + 5)), in $PORTS_FILE"
		return 0
	done
	die "no free block of ports from 8780 to 9779 for profile $PROFILE: set ${PORT_KEYS[*]}, or write $PORTS_FILE"
}

if [[ -n $PROFILE && ! -f $PORTS_FILE && -z ${SVC_ADDR:-} ]]; then
	allocate_ports
fi
if [[ -f $PORTS_FILE ]]; then
	read_ports "$PORTS_FILE"
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
SVC_REDIS_PORT=${SVC_REDIS_PORT:-8775}
[[ $SVC_REDIS_PORT =~ ^[0-9]{1,5}$ ]] || die "SVC_REDIS_PORT=$SVC_REDIS_PORT: want a port number"

# --- dependencies and database -------------------------------------------------------

PRIVATE_REDIS=false
if [[ -z ${REDIS_URL:-} && -z ${REDIS_URL_FILE:-} ]]; then PRIVATE_REDIS=true; fi
# Without DATABASE_URL, the server to check is the one provision.sh uses.
DATABASE_URL=${DATABASE_URL:-${PROVISION_DATABASE_URL:-}} ENSURE_DEPS_PRIVATE_REDIS=$PRIVATE_REDIS \
	bash deploy/scripts/ensure-deps.sh
bash deploy/scripts/provision.sh

# --- the services' environment -------------------------------------------------------

# make test's variables (a PostgreSQL superuser URL among them) and the provisioning
# superuser are not the services' business, nor their shells' and agents'.
for v in $(compgen -v TEST_); do unset "$v"; done
unset PROVISION_DATABASE_URL ENSURE_DEPS_TIMEOUT
# make agents links the agent CLIs there: chat looks for claude and codex on PATH.
if [[ -d $HOME/.local/bin && :$PATH: != *:$HOME/.local/bin:* ]]; then PATH=$PATH:$HOME/.local/bin; fi
# Given to some services only (see start).
readonly GATEWAY_ONLY=(SVC_CODE_PASSWORD SVC_CODE_PASSWORD_FILE)
readonly DATABASE_VARS=(DATABASE_URL DATABASE_URL_FILE READONLY_DATABASE_URL READONLY_DATABASE_URL_FILE)

if [[ ! -d $SVC_CODE_HOME ]]; then
	mkdir -p "$SVC_CODE_HOME"
	chmod 0700 "$SVC_CODE_HOME"
fi
LOG_DIR=$SVC_CODE_HOME/logs
mkdir -p "$LOG_DIR"

# --- Redis of the data home ----------------------------------------------------------

REDIS_DIR=$SVC_CODE_HOME/redis
if $PRIVATE_REDIS; then
	command -v redis-server >/dev/null 2>&1 || die "redis-server not found (deploy/scripts/ensure-deps.sh installs it as root)"
	if [[ $REDIS_DIR == *[\"\\$'\n']* ]]; then
		die "the data home's path holds a double quote, backslash or newline: choose another SVC_CODE_HOME"
	fi
	mkdir -p "$REDIS_DIR"
	chmod 0700 "$REDIS_DIR"
	if [[ ! -s $REDIS_DIR/password ]]; then
		(
			umask 077
			if command -v openssl >/dev/null 2>&1; then
				openssl rand -hex 32
			else
				od -An -N32 -tx1 /dev/urandom | tr -d ' \n'
				echo
			fi >"$REDIS_DIR/password"
		)
	fi
	chmod 0600 "$REDIS_DIR/password"
	REDIS_PASSWORD=$(<"$REDIS_DIR/password")
	[[ $REDIS_PASSWORD =~ ^[A-Za-z0-9._~-]+$ ]] ||
		die "$REDIS_DIR/password holds characters a URL would need escaped; remove it to get a new one"
	# The password is in the file, never on a command line.
	(
		umask 077
		cat >"$REDIS_DIR/redis.conf" <<EOF
# Written by deploy/scripts/run.sh on every start; edit run.sh, not this file.
bind 127.0.0.1
port $SVC_REDIS_PORT
protected-mode yes
requirepass $REDIS_PASSWORD
dir "$REDIS_DIR"
appendonly yes
appendfsync everysec
save ""
daemonize no
logfile ""
EOF
	)
	export REDIS_URL="redis://:$REDIS_PASSWORD@127.0.0.1:$SVC_REDIS_PORT/0"
fi

# --- build ---------------------------------------------------------------------------

BIN=${SVC_BIN_DIR:-bin}
case ${SVC_BUILD:-true} in
true)
	log "building into $BIN/"
	mkdir -p "$BIN"
	go build -o "$BIN/" \
		./services/gateway/cmd/gateway \
		./services/chat/cmd/chat \
		./services/terminal/cmd/terminal \
		./services/shadow/cmd/shadow \
		./services/analytics/cmd/analytics
	;;
false) ;;
*) die "SVC_BUILD=$SVC_BUILD: want true or false" ;;
esac
for name in gateway "${BACKENDS[@]}"; do
	[[ -x $BIN/$name ]] || die "$BIN/$name is missing (SVC_BUILD=false needs the five binaries in SVC_BIN_DIR)"
done

# --- children ------------------------------------------------------------------------

declare -A PIDS=() # service name -> pid
STARTED=()         # service names in start order
LOG_PIDS=()        # the log pipelines

# rotate NAME: NAME.log becomes NAME.log.1, .1 becomes .2, ... up to LOG_GENERATIONS.
rotate() {
	local base=$LOG_DIR/$1.log i
	for ((i = LOG_GENERATIONS - 1; i >= 1; i--)); do
		if [[ -f $base.$i ]]; then mv -f "$base.$i" "$base.$((i + 1))"; fi
	done
	if [[ -f $base ]]; then mv -f "$base" "$base.1"; fi
}

# start NAME COMMAND...: runs COMMAND in the background; its output goes to the terminal,
# prefixed with the name, and to LOG_DIR/NAME.log (the previous run's log is rotated).
start() {
	local name=$1 prefix fd drop=()
	shift
	prefix=$(printf '%-9s| ' "$name")
	case $name in
	gateway) drop=("${DATABASE_VARS[@]}") ;;
	chat | shadow | analytics) drop=("${GATEWAY_ONLY[@]}") ;;
	*) drop=("${GATEWAY_ONLY[@]}" "${DATABASE_VARS[@]}") ;;
	esac
	rotate "$name"
	# The log pipeline ignores INT and TERM, so that a signal does not close the pipe
	# under a service that is still writing its shutdown lines.
	exec {fd}> >(
		trap '' INT TERM HUP
		tee "$LOG_DIR/$name.log" | sed -u "s/^/$prefix/"
	)
	LOG_PIDS+=("$!")
	# A process group of its own (job control on for this one command), so that a Ctrl-C
	# on the terminal reaches this script alone: the stop is then ours, in order, and a
	# service that catches SIGINT cannot make bash take it for one that exited by itself.
	set -m
	env "${drop[@]/#/--unset=}" "$@" </dev/null >&"$fd" 2>&1 &
	PIDS[$name]=$!
	set +m
	STARTED+=("$name")
	exec {fd}>&-
}

alive() { kill -0 "$1" 2>/dev/null; }

# stop NAME...: SIGTERM to each that still runs, up to STOP_TIMEOUT seconds for them to
# exit, then SIGKILL.
stop() {
	local name pid deadline
	for name in "$@"; do
		pid=${PIDS[$name]:-}
		if [[ -n $pid ]] && alive "$pid"; then
			log "stopping $name"
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	deadline=$((SECONDS + STOP_TIMEOUT))
	for name in "$@"; do
		pid=${PIDS[$name]:-}
		[[ -n $pid ]] || continue
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
		if alive "$pid"; then
			log "$name did not stop within ${STOP_TIMEOUT}s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
		unset "PIDS[$name]"
	done
}

# stop_all: the gateway first, then the backends, Redis last (the services may still
# write to it while they stop). Safe to call more than once.
stop_all() {
	local pid deadline
	((${#PIDS[@]} > 0)) || return 0
	stop gateway
	stop "${BACKENDS[@]}"
	stop redis
	PIDS=()
	# Let the log pipelines print the services' last lines.
	deadline=$((SECONDS + 2))
	for pid in "${LOG_PIDS[@]}"; do
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
	done
}

# shellcheck disable=SC2317 # called from traps
on_signal() {
	trap '' INT TERM HUP
	echo >&2
	log "stopping svc-code"
	stop_all
	log "stopped"
	exit 0
}
trap on_signal INT TERM HUP
trap stop_all EXIT

fail() {
	log "$*"
	trap '' INT TERM HUP
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

# shellcheck disable=SC2317 # called through wait_healthy
redis_ok() { [[ $(REDISCLI_AUTH=$REDIS_PASSWORD redis-cli -h 127.0.0.1 -p "$SVC_REDIS_PORT" ping) == PONG ]]; }

# --- start ---------------------------------------------------------------------------

if $PRIVATE_REDIS; then
	if port_busy "$SVC_REDIS_PORT"; then
		die "port $SVC_REDIS_PORT (SVC_REDIS_PORT, this data home's Redis) is in use: is this data home running already? Else set SVC_REDIS_PORT"
	fi
	start redis redis-server "$REDIS_DIR/redis.conf"
	wait_healthy redis redis_ok
	log "redis is healthy (127.0.0.1:$SVC_REDIS_PORT, password in $REDIS_DIR/password)"
fi

for name in "${BACKENDS[@]}"; do
	start "$name" "$BIN/$name"
done
for name in "${BACKENDS[@]}"; do
	wait_healthy "$name" timeout 5 "$BIN/$name" -healthcheck
	log "$name is healthy"
done

# A generated first password goes to this file (mode 0600), not to the gateway's log.
PASSWORD_FILE=$(dirname "$CONFIG")/first-password
FIRST_START=true
if [[ -f $CONFIG ]] && grep -q '^password_hash:' "$CONFIG"; then FIRST_START=false; fi
SVC_PASSWORD_OUT=$PASSWORD_FILE start gateway "$BIN/gateway"
BASE_URL=$(local_url "$SVC_ADDR")
wait_healthy gateway http_ok "$BASE_URL/health"

PASSWD="${PROFILE:+SVC_CODE_PROFILE=$PROFILE }make passwd"
CONFIG_SHOWN=${CONFIG/#"$HOME"\//\~/}
PASSWORD_SHOWN=${PASSWORD_FILE/#"$HOME"\//\~/}
if $FIRST_START && [[ -n ${SVC_CODE_PASSWORD:-}${SVC_CODE_PASSWORD_FILE:-} ]]; then
	PASSWORD_LINES="the one you gave in SVC_CODE_PASSWORD${SVC_CODE_PASSWORD_FILE:+_FILE}
            To change it: $PASSWD"
elif $FIRST_START && [[ -s $PASSWORD_FILE ]]; then
	PASSWORD_LINES="$(<"$PASSWORD_FILE")   (generated on this first start)
            It is also in $PASSWORD_SHOWN (mode 0600): delete that file once
            you have noted the password. To change it: $PASSWD"
else
	PASSWORD_LINES="the one you set (to change it: $PASSWD)"
	if [[ -s $PASSWORD_FILE ]]; then
		PASSWORD_LINES+="
            The generated first password is in $PASSWORD_SHOWN: delete it once noted"
	fi
fi

cat <<EOF

  svc-code is running at $BASE_URL${PROFILE:+  (profile $PROFILE)}

  Password  $PASSWORD_LINES
  API       TOKEN=\$(sed -n 's/^api_token: //p' $CONFIG_SHOWN)
            curl -s -H @- $BASE_URL/api/info <<<"Authorization: Bearer \$TOKEN"
  Data      $SVC_CODE_HOME
  Logs      $LOG_DIR/<service>.log (the previous runs': .log.1 to .log.$LOG_GENERATIONS)
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
		start "$name" "$BIN/$name"
		wait_healthy "$name" timeout 5 "$BIN/$name" -healthcheck
		log "$name is healthy"
		continue
	fi
	log "$name exited (status $status); stopping the others"
	fail "svc-code stopped because $name exited"
done
