#!/usr/bin/env bash
# provision.sh: create svc-code's PostgreSQL database and roles. Safe to run again.
#
# Creates, on the server behind PROVISION_DATABASE_URL:
#   role svc_code       LOGIN, owner of database svc_code (the services' DATABASE_URL)
#   role svc_readonly   LOGIN, NOINHERIT, read-only transactions, statement_timeout 30s,
#                       idle_in_transaction_session_timeout 60s, temp_file_limit 1GB; member of no role (any
#                       membership found is revoked); CONNECT on svc_code and USAGE on its
#                       schema public, nothing else (analytics grants SELECT on its own tables
#                       at start, and refuses to serve SQL if the role can do more)
# and writes both URLs, with passwords generated on the first run, to
# $SVC_CODE_HOME/postgres.env (mode 0600) as DATABASE_URL=... and READONLY_DATABASE_URL=...
# Later runs reuse that file and set the roles' passwords from it again.
# Schema migrations are not done here: chat and analytics apply them at startup.
#
# Environment:
#   PROVISION_DATABASE_URL  a superuser (default postgres://postgres@127.0.0.1:5432/postgres);
#                           if it cannot log in and this runs as root, `runuser -u postgres psql`
#                           over the local socket is used instead
#   SVC_CODE_HOME           data home (default ~/.svc-code)
#   DATABASE_URL            when set, nothing is provisioned: the services use it as it is
set -euo pipefail

readonly DB=svc_code OWNER=svc_code READONLY=svc_readonly

DATA_HOME=${SVC_CODE_HOME:-$HOME/.svc-code}
ENV_FILE=$DATA_HOME/postgres.env
SUPER_URL=${PROVISION_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}

log() { printf 'provision: %s\n' "$*" >&2; }
# redact URL: the URL with its password hidden, for messages.
redact() { sed -E 's#^([a-z]+://[^:/@]+):[^@/]*@#\1:***@#' <<<"$1"; }
die() { log "$*"; exit 1; }

if [[ -n ${DATABASE_URL:-} ]]; then
	log "DATABASE_URL is set: using it as it is, nothing provisioned"
	if [[ -z ${READONLY_DATABASE_URL:-} ]]; then
		log "warning: READONLY_DATABASE_URL is not set; analytics needs a read-only role for its SQL endpoint"
	fi
	exit 0
fi

command -v psql >/dev/null 2>&1 || die "psql not found: install postgresql-client (or run deploy/scripts/ensure-deps.sh)"

# url_host_port URL: prints "host port" of a postgres:// URL; a Unix socket or
# localhost is printed as 127.0.0.1 since the services connect over TCP.
url_host_port() {
	local url=$1 rest host port
	rest=${url#*://}
	rest=${rest%%[/?]*}
	rest=${rest##*@}
	if [[ $rest =~ ^\[([^]]*)\](:([0-9]+))?$ ]]; then
		host="[${BASH_REMATCH[1]}]"
		port=${BASH_REMATCH[3]}
	elif [[ $rest =~ ^([^:]*)(:([0-9]+))?$ ]]; then
		host=${BASH_REMATCH[1]}
		port=${BASH_REMATCH[3]}
	else
		host=
		port=
	fi
	if [[ -z $port && $url =~ [?\&]port=([0-9]+) ]]; then
		port=${BASH_REMATCH[1]}
	fi
	case $host in '' | localhost) host=127.0.0.1 ;; esac
	printf '%s %s\n' "$host" "${port:-5432}"
}
read -r PG_HOST PG_PORT < <(url_host_port "$SUPER_URL")

# --- superuser connection ----------------------------------------------------------

SUPER_MODE=
psql_super() {
	case $SUPER_MODE in
	url) psql "$SUPER_URL" -X -q -v ON_ERROR_STOP=1 "$@" ;;
	# cd /: the postgres user may not be able to read the current directory.
	socket) (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@") ;;
	esac
}

is_superuser() {
	[[ $(psql_super -At -c 'select rolsuper from pg_roles where rolname = current_user' 2>/dev/null </dev/null) == t ]]
}

SUPER_MODE=url
if ! is_superuser; then
	if [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null 2>&1 && id postgres >/dev/null 2>&1; then
		SUPER_MODE=socket
		is_superuser ||
			die "cannot connect as a superuser: neither $(redact "$SUPER_URL") nor runuser -u postgres -- psql -p $PG_PORT works"
		log "$(redact "$SUPER_URL") cannot log in as a superuser; using the postgres user over the local socket"
	else
		die "cannot connect as a superuser with $(redact "$SUPER_URL"): set PROVISION_DATABASE_URL, or run this as root"
	fi
fi

# --- passwords ---------------------------------------------------------------------

new_password() {
	if command -v openssl >/dev/null 2>&1; then
		openssl rand -hex 24
	else
		od -An -N24 -tx1 /dev/urandom | tr -d ' \n'
	fi
}

# saved_password KEY: the password in KEY's URL in the env file, or nothing.
saved_password() {
	local line url
	[[ -f $ENV_FILE ]] || return 0
	line=$(grep -E "^$1=" "$ENV_FILE" | tail -n 1) || return 0
	url=${line#*=}
	if [[ $url =~ ^postgres(ql)?://[^:/@]+:([^@/]*)@ ]]; then
		printf '%s' "${BASH_REMATCH[2]}"
	fi
}

owner_pw=$(saved_password DATABASE_URL)
readonly_pw=$(saved_password READONLY_DATABASE_URL)
for pw in "$owner_pw" "$readonly_pw"; do
	# Only URL-safe characters, so the URLs need no escaping and the SQL no quoting beyond :'var'.
	if [[ -n $pw && ! $pw =~ ^[A-Za-z0-9._~-]+$ ]]; then
		die "$ENV_FILE holds a password with characters this script does not escape; remove the file to get new ones"
	fi
done
[[ -n $owner_pw ]] || owner_pw=$(new_password)
[[ -n $readonly_pw ]] || readonly_pw=$(new_password)

database_url="postgres://$OWNER:$owner_pw@$PG_HOST:$PG_PORT/$DB?sslmode=disable"
readonly_url="postgres://$READONLY:$readonly_pw@$PG_HOST:$PG_PORT/$DB?sslmode=disable"

# The file first: a run that fails after ALTER ROLE must not lose the passwords it set.
mkdir -p "$DATA_HOME"
chmod 0700 "$DATA_HOME"
tmp=$(mktemp "$DATA_HOME/.postgres.env.XXXXXX")
trap 'rm -f "$tmp"' EXIT
chmod 0600 "$tmp"
cat >"$tmp" <<EOF
# Written by deploy/scripts/provision.sh; it reuses these passwords on every run.
DATABASE_URL=$database_url
READONLY_DATABASE_URL=$readonly_url
EOF
mv -f "$tmp" "$ENV_FILE"
trap - EXIT

# --- roles and database ------------------------------------------------------------

# Fed on stdin, so the passwords never appear in a process list.
psql_super <<SQL
\\set owner_pw '$owner_pw'
\\set readonly_pw '$readonly_pw'
SELECT 'CREATE ROLE $OWNER' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$OWNER') \\gexec
SELECT 'CREATE ROLE $READONLY' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$READONLY') \\gexec
ALTER ROLE $OWNER WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
	PASSWORD :'owner_pw';
ALTER ROLE $READONLY WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS
	PASSWORD :'readonly_pw';
ALTER ROLE $READONLY SET default_transaction_read_only = on;
ALTER ROLE $READONLY SET statement_timeout = '30s';
ALTER ROLE $READONLY SET idle_in_transaction_session_timeout = '60s';
-- A query's temporary files (sorts, recursive CTEs) may not fill the disk.
ALTER ROLE $READONLY SET temp_file_limit = '1GB';
-- No memberships at all (pg_read_server_files, pg_signal_backend, ... or any other): a
-- NOINHERIT role could still SET ROLE to them. analytics refuses to serve SQL otherwise.
SELECT format('REVOKE %I FROM $READONLY', r.rolname) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid
	WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = '$READONLY') \\gexec
SELECT 'CREATE DATABASE $DB OWNER $OWNER' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$DB') \\gexec
ALTER DATABASE $DB OWNER TO $OWNER;
-- PUBLIC keeps no CONNECT or TEMP: the two roles get what they need by name.
REVOKE ALL ON DATABASE $DB FROM PUBLIC;
GRANT CONNECT ON DATABASE $DB TO $READONLY;
\\connect $DB
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO $READONLY;
SQL

# --- check -------------------------------------------------------------------------

for url in "$database_url" "$readonly_url"; do
	role=${url#postgres://}
	role=${role%%:*}
	if ! err=$(PGCONNECT_TIMEOUT=10 psql "$url" -X -Atq -c 'select 1' 2>&1 </dev/null); then
		die "role $role cannot log in over TCP at $PG_HOST:$PG_PORT (check pg_hba.conf): $err"
	fi
done
log "database $DB, roles $OWNER and $READONLY ready; URLs in $ENV_FILE"
