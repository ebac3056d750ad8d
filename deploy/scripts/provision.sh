#!/usr/bin/env bash
# provision.sh: create the PostgreSQL database and roles of one svc-code data home.
# Safe to run again.
#
# Each data home has a database and two roles of its own, named after a short hash of
# the data home's real path (<h>: the first 8 hex digits of its SHA-256):
#   role svc_code_<h>      LOGIN, owner of database svc_code_<h> (the services' DATABASE_URL)
#   role svc_readonly_<h>  LOGIN, NOINHERIT, read-only transactions, statement_timeout 30s,
#                          idle_in_transaction_session_timeout 60s, temp_file_limit 1GB;
#                          member of no role (any membership found is revoked); CONNECT on
#                          its database and USAGE on its schema public, nothing else
#                          (analytics grants SELECT on its own tables at start, and refuses
#                          to serve SQL if the role can do more)
# and writes both URLs, with passwords generated on the first run, to
# <data home>/postgres.env (mode 0600) as DATABASE_URL=... and READONLY_DATABASE_URL=...
# Later runs reuse that file's names and passwords (a data home that was moved keeps its
# database) and set the roles' passwords from it again. Nothing of another data home is
# touched: two data homes (host profiles, test stacks) never share a database, and the
# provisioning of one never re-keys the roles of another. The database's comment names
# the data home it belongs to; a copy of a data home (its postgres.env naming a database
# that another existing data home owns) is refused, with how to give it its own.
# A postgres.env of an older version, naming the database svc_code that every data home
# shared, is set aside as postgres.env.svc_code (the database svc_code is left as it
# was) and the data home gets a database of its own.
# Schema migrations are not done here: chat and analytics apply them at startup.
#
# Environment:
#   PROVISION_DATABASE_URL  a superuser (default postgres://postgres@127.0.0.1:5432/postgres);
#                           if it cannot log in and this runs as root, `runuser -u postgres psql`
#                           over the local socket is used instead
#   SVC_CODE_HOME           data home (default ~/.svc-code, or ~/.svc-code/profiles/NAME
#                           for the host profile SVC_CODE_PROFILE=NAME)
#   DATABASE_URL            when set, nothing is provisioned: the services use it as it is
set -euo pipefail

if [[ -n ${SVC_CODE_HOME:-} ]]; then
	DATA_HOME=$SVC_CODE_HOME
elif [[ -n ${SVC_CODE_PROFILE:-} ]]; then
	DATA_HOME=$HOME/.svc-code/profiles/$SVC_CODE_PROFILE
else
	DATA_HOME=$HOME/.svc-code
fi
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

# --- names and passwords -------------------------------------------------------------

new_password() {
	if command -v openssl >/dev/null 2>&1; then
		openssl rand -hex 24
	else
		od -An -N24 -tx1 /dev/urandom | tr -d ' \n'
	fi
}

# saved_url KEY: KEY's URL in the env file, or nothing.
saved_url() {
	local line
	[[ -f $ENV_FILE ]] || return 0
	line=$(grep -E "^$1=" "$ENV_FILE" | tail -n 1) || return 0
	printf '%s' "${line#*=}"
}

# url_parts URL: prints "role password database" of postgres://role:password@host/database.
url_parts() {
	if [[ $1 =~ ^postgres(ql)?://([^:/@]+):([^@/]*)@[^/]*/([^?]*) ]]; then
		printf '%s %s %s\n' "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}"
	fi
}

mkdir -p "$DATA_HOME"
chmod 0700 "$DATA_HOME"
REAL_HOME=$(cd "$DATA_HOME" && pwd -P)
# The path goes into the database's comment through a psql variable.
if [[ $REAL_HOME == *[\'\\$'\n']* ]]; then
	die "the data home's path $REAL_HOME holds a quote, backslash or newline: choose another SVC_CODE_HOME"
fi

owner_url=$(saved_url DATABASE_URL)
ro_url=$(saved_url READONLY_DATABASE_URL)
owner_name='' owner_pw='' db_name='' ro_name='' readonly_pw='' ro_db=''
if [[ -n $owner_url ]]; then read -r owner_name owner_pw db_name < <(url_parts "$owner_url") || true; fi
if [[ -n $ro_url ]]; then read -r ro_name readonly_pw ro_db < <(url_parts "$ro_url") || true; fi

if [[ $db_name == svc_code || $owner_name == svc_code || $ro_name == svc_readonly ]]; then
	# Written by a version that gave every data home the same database: set it aside.
	mv -f "$ENV_FILE" "$ENV_FILE.svc_code"
	log "$ENV_FILE named the database svc_code that every data home shared: kept as"
	log "$ENV_FILE.svc_code; that database is left as it was, and this data home gets its own"
	owner_url='' ro_url='' owner_name='' owner_pw='' db_name='' ro_name='' readonly_pw='' ro_db=''
fi

# The names: the env file's (a moved data home keeps its database), else from the real path.
if [[ $db_name =~ ^svc_code_([0-9a-f]{8})$ ]]; then
	suffix=${BASH_REMATCH[1]}
	if [[ $owner_name != "svc_code_$suffix" || $ro_name != "svc_readonly_$suffix" || $ro_db != "$db_name" ]]; then
		die "$ENV_FILE names database $db_name with roles ${owner_name:-?} and ${ro_name:-?}, which do not belong together: remove the file to start afresh"
	fi
elif [[ -n $owner_url || -n $ro_url ]]; then
	die "$ENV_FILE names no database that this script provisions (svc_code_<hash>): set DATABASE_URL to use another database, or remove the file"
else
	suffix=$(printf '%s' "$REAL_HOME" | sha256sum | cut -c1-8)
fi
readonly DB=svc_code_$suffix OWNER=svc_code_$suffix READONLY=svc_readonly_$suffix

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

# --- ownership -----------------------------------------------------------------------

# The database's comment names the data home it belongs to. If another data home that still
# exists names this database in its postgres.env, this one is a copy of it: provisioning
# would take over its database (and re-key its roles), so refuse.
readonly LABEL="svc-code data home "
comment=$(psql_super -At -c "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$DB'" </dev/null)
if [[ $comment == "$LABEL"* && ${comment#"$LABEL"} != "$REAL_HOME" ]]; then
	other=${comment#"$LABEL"}
	if [[ -f $other/postgres.env ]] && grep -q "^DATABASE_URL=postgres://$OWNER:[^@]*@[^/]*/$DB?" "$other/postgres.env" 2>/dev/null; then
		die "database $DB belongs to the data home $other, of which $DATA_HOME is a copy: remove $ENV_FILE to give this data home a database of its own"
	fi
	log "database $DB moves from the data home $other (gone, or no longer using it) to $REAL_HOME"
fi

# The file first: a run that fails after ALTER ROLE must not lose the passwords it set.
tmp=$(mktemp "$DATA_HOME/.postgres.env.XXXXXX")
trap 'rm -f "$tmp"' EXIT
chmod 0600 "$tmp"
cat >"$tmp" <<ENV
# Written by deploy/scripts/provision.sh; it reuses these names and passwords on every run.
# Database $DB belongs to the data home $REAL_HOME.
DATABASE_URL=$database_url
READONLY_DATABASE_URL=$readonly_url
ENV
mv -f "$tmp" "$ENV_FILE"
trap - EXIT

# --- roles and database ------------------------------------------------------------

# Fed on stdin, so the passwords never appear in a process list.
psql_super <<SQL
\\set owner_pw '$owner_pw'
\\set readonly_pw '$readonly_pw'
\\set label '$LABEL$REAL_HOME'
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
COMMENT ON DATABASE $DB IS :'label';
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
