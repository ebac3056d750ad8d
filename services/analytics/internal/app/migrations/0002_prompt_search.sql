-- prompt_tsv indexes the first 100000 characters of a prompt, not all of
-- it: a tsvector holds at most 1 MiB, so a prompt of about 1 MB of distinct
-- words (a pasted log, hashes) made the insert fail and the turn, with its
-- cost, could not be recorded. 100000 characters stay far below the limit
-- whatever the text. PostgreSQL 15 cannot change a generated column's
-- expression, so the column (and its index) is made again; it stays last.

ALTER TABLE turns DROP COLUMN prompt_tsv;
ALTER TABLE turns ADD COLUMN prompt_tsv tsvector NOT NULL
	GENERATED ALWAYS AS (to_tsvector('english', left(user_prompt, 100000))) STORED;
CREATE INDEX turns_prompt_tsv_idx ON turns USING gin (prompt_tsv);
