-- The golden vectors of hash format 1 (tests/vectors/v1.jsonl, which the
-- client encoders' tests and the core's read too): every alerts_bloom,
-- alerts_mask and alerts_ulid_floor call gives the recorded bitmap (at
-- 512, 256 and 128 bits) or refuses the input again. Read as whole lines
-- (CSV with quote and delimiter characters no line holds).
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
CREATE TEMP TABLE vec (line jsonb);
\copy vec FROM 'tests/vectors/v1.jsonl' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
CREATE FUNCTION pg_temp.vec_call(v jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
    IF v->>'fn' = 'ulid_floor' THEN
        RETURN alerts_ulid_floor((v->>'input')::timestamptz);
    END IF;
    out := CASE v->>'fn' WHEN 'bloom' THEN alerts_bloom((v->>'input')::jsonb, (v->>'bits')::int)::text
                         ELSE alerts_mask((v->>'input')::jsonb, (v->>'bits')::int)::text END;
    -- the bit string as hex, as recorded
    RETURN (SELECT string_agg(to_hex(substring(out FROM i FOR 4)::bit(4)::int), '' ORDER BY i)
            FROM generate_series(1, length(out), 4) i);
EXCEPTION WHEN OTHERS THEN
    RETURN 'ERROR';
END $$;
SELECT line->>'fn' AS fn, count(*) AS vectors,
       count(*) FILTER (WHERE line ? 'error') AS refused,
       count(*) FILTER (WHERE pg_temp.vec_call(line) IS DISTINCT FROM coalesce(line->>'output', 'ERROR')) AS differ
FROM vec GROUP BY 1 ORDER BY 1;
