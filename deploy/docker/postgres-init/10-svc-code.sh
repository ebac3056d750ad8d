#!/usr/bin/env bash
# Runs once, when the postgres container initialises an empty data directory.
# Creates what deploy/scripts/provision.sh creates on a local server: role svc_code
# (LOGIN, owner of database svc_code) and role svc_readonly (LOGIN, NOINHERIT,
# read-only transactions, statement_timeout 30s, idle_in_transaction_session_timeout
# 60s, temp_file_limit 1GB, member of no role; CONNECT on svc_code and USAGE on schema public only:
# analytics grants SELECT on its own tables at start).
# Passwords: SVC_CODE_DB_PASSWORD and SVC_READONLY_DB_PASSWORD (see docker-compose.yml).
set -euo pipefail

: "${SVC_CODE_DB_PASSWORD:?}" "${SVC_READONLY_DB_PASSWORD:?}"

psql -v ON_ERROR_STOP=1 -X -q --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
	-v owner_pw="$SVC_CODE_DB_PASSWORD" -v readonly_pw="$SVC_READONLY_DB_PASSWORD" <<'SQL'
SELECT 'CREATE ROLE svc_code' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'svc_code') \gexec
SELECT 'CREATE ROLE svc_readonly' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'svc_readonly') \gexec
ALTER ROLE svc_code WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
	PASSWORD :'owner_pw';
ALTER ROLE svc_readonly WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS
	PASSWORD :'readonly_pw';
ALTER ROLE svc_readonly SET default_transaction_read_only = on;
ALTER ROLE svc_readonly SET statement_timeout = '30s';
ALTER ROLE svc_readonly SET idle_in_transaction_session_timeout = '60s';
-- A query's temporary files (sorts, recursive CTEs) may not fill the disk.
ALTER ROLE svc_readonly SET temp_file_limit = '1GB';
SELECT 'CREATE DATABASE svc_code OWNER svc_code' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'svc_code') \gexec
ALTER DATABASE svc_code OWNER TO svc_code;
REVOKE ALL ON DATABASE svc_code FROM PUBLIC;
GRANT CONNECT ON DATABASE svc_code TO svc_readonly;
\connect svc_code
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO svc_readonly;
SQL
