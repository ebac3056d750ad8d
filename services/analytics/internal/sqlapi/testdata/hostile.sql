-- Hostile statements for TestHostileCorpus: each must be refused, or run
-- with no lasting side effect. Entries are separated by lines "-- ====".
-- Tables: probe_turns (granted), probe_tags (granted), probe_secret (not
-- granted); sequence probe_turns_id_seq; notification channel "probe".
-- ====
INSERT INTO probe_tags VALUES (9, 'x')
-- ====
UPDATE probe_turns SET cost = 0
-- ====
DELETE FROM probe_tags
-- ====
MERGE INTO probe_tags t USING (VALUES (1)) v(x) ON false WHEN NOT MATCHED THEN INSERT VALUES (1, 'm')
-- ====
TRUNCATE probe_tags
-- ====
DROP TABLE probe_tags
-- ====
ALTER TABLE probe_tags ADD COLUMN pwned int
-- ====
CREATE TABLE pwned (x int)
-- ====
CREATE TEMP TABLE pwned (x int)
-- ====
SELECT * INTO pwned FROM probe_tags
-- ====
CREATE TABLE pwned AS SELECT 1
-- ====
CREATE FUNCTION pwned() RETURNS int LANGUAGE sql AS 'SELECT 1'
-- ====
GRANT SELECT ON probe_secret TO PUBLIC
-- ====
REVOKE SELECT ON probe_turns FROM PUBLIC
-- ====
SELECT 1; DELETE FROM probe_tags
-- ====
SELECT 1;DELETE FROM probe_tags;
-- ====
SELECT 'a\'; DELETE FROM probe_tags; --'
-- ====
SELECT 1 /* /* nested */ ; DELETE FROM probe_tags; */ ; DELETE FROM probe_tags
-- ====
SELECT 1 -- comment
; DELETE FROM probe_tags
-- ====
SELECT $$ ; $$; DELETE FROM probe_tags
-- ====
SELECT $a$ $b$ ; $a$; DELETE FROM probe_tags
-- ====
SELECT E'\'; DELETE FROM probe_tags; --'; DELETE FROM probe_tags
-- ====
SELECT "x;" FROM (SELECT 1 AS "x;") s; DELETE FROM probe_tags
-- ====
WITH d AS (DELETE FROM probe_tags RETURNING *) SELECT * FROM d
-- ====
WITH u AS (UPDATE probe_turns SET cost = 0 RETURNING id) SELECT * FROM u
-- ====
WITH i AS (INSERT INTO probe_tags VALUES (5, 'cte') RETURNING *) SELECT * FROM i
-- ====
WITH x AS (SELECT 1) DELETE FROM probe_tags
-- ====
EXPLAIN ANALYZE DELETE FROM probe_tags
-- ====
EXPLAIN (ANALYZE, BUFFERS) UPDATE probe_turns SET cost = 0
-- ====
SELECT * FROM probe_turns FOR UPDATE
-- ====
SELECT * FROM probe_turns FOR SHARE
-- ====
SELECT * FROM probe_tags FOR NO KEY UPDATE
-- ====
SELECT * FROM probe_tags FOR KEY SHARE
-- ====
LOCK TABLE probe_turns IN ACCESS EXCLUSIVE MODE
-- ====
LOCK TABLE probe_turns IN ACCESS SHARE MODE
-- ====
SET ROLE postgres
-- ====
SET SESSION AUTHORIZATION postgres
-- ====
SET statement_timeout = 0
-- ====
SET search_path = pg_catalog
-- ====
SET default_transaction_read_only = off
-- ====
SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE
-- ====
SET transaction_read_only = off
-- ====
RESET ALL
-- ====
SELECT set_config('search_path', 'pg_catalog', false)
-- ====
SELECT set_config('transaction_read_only', 'off', false)
-- ====
SELECT set_config('statement_timeout', '0', false), pg_sleep(30)
-- ====
SELECT "set_config"('application_name', 'pwned', false)
-- ====
SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)
-- ====
ALTER ROLE CURRENT_USER SET statement_timeout = 0
-- ====
ALTER ROLE CURRENT_USER SET default_transaction_read_only = off
-- ====
ALTER DATABASE postgres SET statement_timeout = 0
-- ====
ALTER SYSTEM SET statement_timeout = 0
-- ====
COPY probe_tags TO STDOUT
-- ====
COPY probe_tags FROM STDIN
-- ====
COPY probe_tags TO '/tmp/sqlapi-pwned'
-- ====
COPY (SELECT 1) TO PROGRAM 'touch /tmp/sqlapi-pwned'
-- ====
COPY probe_tags FROM PROGRAM 'echo 1,x'
-- ====
LISTEN probe
-- ====
NOTIFY probe, 'pwned'
-- ====
SELECT pg_notify('probe', 'pwned')
-- ====
UNLISTEN *
-- ====
SELECT pg_advisory_lock(42)
-- ====
SELECT pg_try_advisory_lock(42), pg_advisory_lock_shared(43)
-- ====
SELECT pg_advisory_xact_lock(44)
-- ====
SELECT lo_creat(-1)
-- ====
SELECT lo_from_bytea(0, 'pwned')
-- ====
SELECT lo_import('/etc/hostname')
-- ====
SELECT lo_export(1, '/tmp/sqlapi-pwned')
-- ====
SELECT pg_read_file('/etc/passwd')
-- ====
SELECT pg_read_binary_file('/etc/passwd')
-- ====
SELECT * FROM pg_ls_dir('.')
-- ====
SELECT pg_stat_file('postgresql.conf')
-- ====
SELECT pg_catalog.pg_read_file('postgresql.conf', 0, 100)
-- ====
SELECT "pg_read_file"('/etc/passwd')
-- ====
SELECT * FROM dblink('dbname=postgres', 'DELETE FROM probe_tags') AS t(x int)
-- ====
SELECT dblink_exec('dbname=postgres', 'DELETE FROM probe_tags')
-- ====
CREATE EXTENSION dblink
-- ====
SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
-- ====
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
-- ====
SELECT pg_reload_conf()
-- ====
SELECT pg_rotate_logfile()
-- ====
SELECT pg_switch_wal()
-- ====
SELECT pg_create_restore_point('pwned')
-- ====
SELECT pg_logical_emit_message(true, 'pwned', 'x')
-- ====
SELECT pg_stat_reset()
-- ====
SELECT nextval('probe_turns_id_seq')
-- ====
SELECT setval('probe_turns_id_seq', 1000)
-- ====
PREPARE pwned AS SELECT 1
-- ====
EXECUTE pwned
-- ====
DEALLOCATE ALL
-- ====
DO $$ BEGIN DELETE FROM probe_tags; END $$
-- ====
DO $$ BEGIN PERFORM pg_advisory_lock(45); END $$
-- ====
CALL pwned()
-- ====
BEGIN
-- ====
COMMIT
-- ====
ROLLBACK
-- ====
START TRANSACTION READ WRITE
-- ====
SAVEPOINT s
-- ====
PREPARE TRANSACTION 'pwned'
-- ====
DECLARE c CURSOR WITH HOLD FOR SELECT * FROM probe_turns
-- ====
VACUUM probe_tags
-- ====
ANALYZE probe_tags
-- ====
CLUSTER probe_turns USING probe_turns_pkey
-- ====
REINDEX TABLE probe_turns
-- ====
CHECKPOINT
-- ====
DISCARD ALL
-- ====
LOAD 'auto_explain'
-- ====
COMMENT ON TABLE probe_tags IS 'pwned'
-- ====
SECURITY LABEL ON TABLE probe_tags IS 'pwned'
-- ====
SELECT query_to_xml('DELETE FROM probe_tags RETURNING 1', true, true, '')
-- ====
SELECT query_to_xml('SELECT pg_advisory_lock(46)', true, true, '')
-- ====
SELECT ts_stat('SELECT to_tsvector(note) FROM probe_turns')
-- ====
SELECT txid_current()
-- ====
SELECT * FROM probe_secret
-- ====
TABLE probe_secret
-- ====
SELECT U&"\0070g_read_file"('/etc/passwd')
-- ====
SELECT U&'\0064' || 'x'; DELETE FROM probe_tags
-- ====
SELECT 1update FROM probe_tags
-- ====
SELECT pg_sleep(30)
-- ====
SELECT * FROM generate_series(1, 100000000) g ORDER BY g DESC
-- ====
SELECT E'a'
'\'' , pg_advisory_lock(42) AS pwned --'
