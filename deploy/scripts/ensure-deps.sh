#!/usr/bin/env bash
# ensure-deps.sh: make sure the PostgreSQL and Redis that svc-code uses are up.
#
#   deploy/scripts/ensure-deps.sh           start (and if need be install) local servers
#   deploy/scripts/ensure-deps.sh --check   only check; exit 1 with a hint if one is down
#
# Targets: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) and
# REDIS_URL (default redis://127.0.0.1:6379/0). A target on 127.0.0.1, localhost or ::1
# is started when it is installed but stopped, and installed with apt-get when absent
# (as root). A target on any other host is only checked for reachability.
#
# Environment: ENSURE_DEPS_TIMEOUT (seconds to wait for both to answer, default 60);
# ENSURE_DEPS_PRIVATE_REDIS=true: the caller starts a Redis of its own (run.sh does, for
# each data home), so only make sure that redis-server is installed, and leave REDIS_URL's.
set -euo pipefail

readonly DEFAULT_PG_URL='postgres://postgres@127.0.0.1:5432/postgres'
readonly DEFAULT_REDIS_URL='redis://127.0.0.1:6379/0'

PG_URL=${DATABASE_URL:-$DEFAULT_PG_URL}
REDIS_URL=${REDIS_URL:-$DEFAULT_REDIS_URL}
TIMEOUT=${ENSURE_DEPS_TIMEOUT:-60}
PRIVATE_REDIS=${ENSURE_DEPS_PRIVATE_REDIS:-false}
CHECK_ONLY=false

log() { printf 'ensure-deps: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
[[ $PRIVATE_REDIS == true || $PRIVATE_REDIS == false ]] || die "ENSURE_DEPS_PRIVATE_REDIS=$PRIVATE_REDIS: want true or false"

usage() {
	sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case ${1:-} in
'') ;;
--check) CHECK_ONLY=true ;;
-h | --help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

# --- parsing -----------------------------------------------------------------

# url_host_port URL DEFAULT_PORT: prints "host port" of a URL such as
# scheme://user:pw@host:port/db?x=y (host may be [v6]). An empty host means a
# Unix socket (libpq); it is printed as "localhost".
url_host_port() {
	local url=$1 default_port=$2 rest host port
	rest=${url#*://}
	rest=${rest%%[/?]*}
	rest=${rest##*@}
	if [[ $rest =~ ^\[([^]]*)\](:([0-9]+))?$ ]]; then
		host=${BASH_REMATCH[1]}
		port=${BASH_REMATCH[3]}
	elif [[ $rest =~ ^([^:]*)(:([0-9]+))?$ ]]; then
		host=${BASH_REMATCH[1]}
		port=${BASH_REMATCH[3]}
	else
		host=$rest
		port=
	fi
	# libpq also takes the host as a query parameter (?host=/run/postgresql).
	if [[ -z $host && $url =~ [?\&]host=([^\&]*) ]]; then
		host=${BASH_REMATCH[1]}
	fi
	[[ -n $host && $host != /* ]] || host=localhost
	if [[ -z $port && $url =~ [?\&]port=([0-9]+) ]]; then
		port=${BASH_REMATCH[1]}
	fi
	printf '%s %s\n' "$host" "${port:-$default_port}"
}

is_local() {
	case $1 in
	127.0.0.1 | localhost | ::1 | 0:0:0:0:0:0:0:1) return 0 ;;
	*) return 1 ;;
	esac
}

read -r PG_HOST PG_PORT < <(url_host_port "$PG_URL" 5432)
read -r REDIS_HOST REDIS_PORT < <(url_host_port "$REDIS_URL" 6379)

# --- probes --------------------------------------------------------------------

# tcp_open HOST PORT: a TCP connection can be opened (bash /dev/tcp, no tools needed).
tcp_open() {
	local host=$1 port=$2
	[[ $host == localhost ]] && host=127.0.0.1
	# shellcheck disable=SC2016 # $1 and $2 are expanded by the inner bash
	timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null
}

pg_up() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 3 -d "$PG_URL" >/dev/null 2>&1
	else
		tcp_open "$PG_HOST" "$PG_PORT"
	fi
}

redis_up() {
	if command -v redis-cli >/dev/null 2>&1; then
		[[ $(timeout 5 redis-cli --no-auth-warning -u "$REDIS_URL" ping 2>/dev/null) == PONG ]]
	else
		tcp_open "$REDIS_HOST" "$REDIS_PORT"
	fi
}

# pg_login_error: empty when a login with PG_URL works (needs psql), else psql's message.
pg_login_error() {
	command -v psql >/dev/null 2>&1 || return 0
	local out
	if ! out=$(PGCONNECT_TIMEOUT=5 psql "$PG_URL" -X -Atq -c 'select 1' 2>&1 </dev/null); then
		printf '%s\n' "$out"
	fi
}

# --- installing and starting -------------------------------------------------------

pg_installed() {
	command -v pg_ctlcluster >/dev/null 2>&1 && compgen -G '/etc/postgresql/*' >/dev/null
}

redis_installed() { command -v redis-server >/dev/null 2>&1; }

# install_packages PKG...: installs Debian packages as root, or says how to.
install_packages() {
	if [[ $(id -u) -ne 0 ]]; then
		log "not installed: $*. Install them, then run this again:"
		log "  sudo apt-get update && sudo apt-get install -y $*"
		exit 1
	fi
	command -v apt-get >/dev/null 2>&1 ||
		die "not installed: $*, and there is no apt-get here: install PostgreSQL and Redis by hand"
	log "installing $* with apt-get"
	apt-get update </dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" </dev/null
}

# pg_cluster_for_port PORT: prints "version name" of the cluster configured for PORT,
# highest version first; falls back to the highest version's "main" for 5432.
pg_cluster_for_port() {
	local port=$1 ver name cport _rest versions
	if command -v pg_lsclusters >/dev/null 2>&1; then
		while read -r ver name cport _rest; do
			if [[ $cport == "$port" ]]; then
				printf '%s %s\n' "$ver" "$name"
				return 0
			fi
		done < <(pg_lsclusters -h 2>/dev/null | sort -k1,1Vr)
	fi
	[[ $port == 5432 ]] || return 1
	versions=$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V)
	ver=$(tail -n 1 <<<"$versions")
	[[ -n $ver ]] || return 1
	printf '%s main\n' "$ver"
}

start_pg() {
	local ver name
	if ! read -r ver name < <(pg_cluster_for_port "$PG_PORT"); then
		die "PostgreSQL is installed, but no cluster is set up for port $PG_PORT (see pg_lsclusters)"
	fi
	if [[ $(id -u) -ne 0 && $(id -un) != postgres ]]; then
		log "PostgreSQL $ver/$name is stopped; start it with:"
		log "  sudo pg_ctlcluster --skip-systemctl-redirect $ver $name start"
		exit 1
	fi
	if [[ ! -d /etc/postgresql/$ver/$name ]]; then
		log "creating PostgreSQL cluster $ver/$name"
		pg_createcluster "$ver" "$name"
	fi
	log "starting PostgreSQL $ver/$name"
	# "already running" (exit 2) is fine: the wait below decides.
	pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start || true
}

start_redis() {
	local dir logdir
	if [[ $(id -u) -eq 0 ]]; then
		dir=/var/lib/redis
		logdir=/var/log/redis
	else
		dir=${TMPDIR:-/tmp}/svc-code-redis-$(id -u)
		logdir=$dir
	fi
	mkdir -p "$dir" "$logdir"
	log "starting Redis on 127.0.0.1:$REDIS_PORT (no persistence)"
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" \
		--save "" --appendonly no --dir "$dir" --logfile "$logdir/ci.log"
}

# wait_up NAME PROBE: waits for PROBE to succeed until the deadline.
wait_up() {
	local name=$1 probe=$2
	until "$probe"; do
		if ((SECONDS >= DEADLINE)); then
			die "$name did not answer within ${TIMEOUT}s"
		fi
		sleep 1
	done
}

hint() {
	cat >&2 <<EOF
ensure-deps: start them with: deploy/scripts/ensure-deps.sh
  (it starts local servers that are installed, and installs them with apt-get as root),
  or by hand on Debian: pg_ctlcluster --skip-systemctl-redirect <version> main start
  and: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ""
  Point elsewhere with DATABASE_URL / REDIS_URL (TEST_DATABASE_URL / TEST_REDIS_URL for make test).
EOF
}

# --- main ----------------------------------------------------------------------

# redis_ready: Redis answers at REDIS_URL; or, for a private Redis, redis-server is installed.
redis_ready() {
	if $PRIVATE_REDIS; then redis_installed; else redis_up; fi
}

pg_ok=false
redis_ok=false
pg_up && pg_ok=true
redis_ready && redis_ok=true

if $CHECK_ONLY; then
	failed=false
	if ! $pg_ok; then
		log "PostgreSQL is not reachable at $PG_HOST:$PG_PORT ($PG_URL)"
		failed=true
	else
		err=$(pg_login_error)
		if [[ -n $err ]]; then
			log "PostgreSQL at $PG_HOST:$PG_PORT answers, but logging in failed:"
			printf '  %s\n' "$err" >&2
			log "set the URL of a role that can log in (TEST_DATABASE_URL for make test)"
			exit 1
		fi
	fi
	if ! $redis_ok; then
		log "Redis is not reachable at $REDIS_HOST:$REDIS_PORT ($REDIS_URL)"
		failed=true
	fi
	if $failed; then
		hint
		exit 1
	fi
	exit 0
fi

if $pg_ok && $redis_ok; then
	exit 0
fi

for pair in "PostgreSQL:$pg_ok:$PG_HOST" "Redis:$redis_ok:$($PRIVATE_REDIS && echo localhost || echo "$REDIS_HOST")"; do
	IFS=: read -r name ok host <<<"$pair"
	if [[ $ok == false ]] && ! is_local "$host"; then
		die "$name at $host is not reachable, and it is not on this machine: start it there"
	fi
done

missing=()
if ! $pg_ok && ! pg_installed; then missing+=(postgresql); fi
if ! $redis_ok && ! redis_installed; then missing+=(redis-server); fi
if ((${#missing[@]} > 0)); then
	install_packages "${missing[@]}"
	# The packages' scripts may have started them already.
	pg_up && pg_ok=true
	redis_ready && redis_ok=true
fi

if ! $pg_ok; then start_pg; fi
if ! $redis_ok; then start_redis; fi

DEADLINE=$((SECONDS + TIMEOUT))
wait_up PostgreSQL pg_up
if $PRIVATE_REDIS; then
	log "PostgreSQL ($PG_HOST:$PG_PORT) is up and redis-server installed"
	exit 0
fi
wait_up Redis redis_up
log "PostgreSQL ($PG_HOST:$PG_PORT) and Redis ($REDIS_HOST:$REDIS_PORT) are up"
