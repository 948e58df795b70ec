-- Deterministic alert history (psql variables: large, medium, small, total,
-- anchor). Tenants: 'large', 'medium' and 'small' of the given sizes, the
-- rest of `total` spread over tenants of skewed sizes. Keys and values are
-- per-organisation ULID-shaped ids. Each attribute's values come in classes
-- with known frequencies within a tenant: class 0 ~50%, 1 ~1%, 2 ~0.05%,
-- 3 ~0.005%, then a long uniform tail, so benchmark filters hit a chosen
-- selectivity. Timestamps cover 365 days before :anchor; ids are ULIDs of
-- their timestamps (random part derived from a hash, so reruns agree).
-- With -v readable=1 (the demo) tenants, keys and values are words instead
-- ('acme', 'team', 'payments'): same shapes and frequencies, readable rows.
SELECT setseed(0.20261121);

DROP TABLE IF EXISTS bench_orgs;
CREATE TABLE bench_orgs (seq int PRIMARY KEY, role text, org text COLLATE "C" UNIQUE, n int);
INSERT INTO bench_orgs VALUES
    (1, 'large', '01' || upper(substr(md5('org1'), 1, 24)), :large),
    (2, 'medium', '01' || upper(substr(md5('org2'), 1, 24)), :medium),
    (3, 'small', '01' || upper(substr(md5('org3'), 1, 24)), :small);
-- The rest: tenants of 0.4%, 0.2%, ... of what is left, at least 200 rows.
INSERT INTO bench_orgs
SELECT 3 + i, 'other', '01' || upper(substr(md5('org' || (3 + i)), 1, 24)), n
FROM (SELECT i, greatest(200, ((:total - :large - :medium - :small) * 0.4 / (i + 10))::int) AS n
      FROM generate_series(1, 5000) i) s
WHERE i <= 5000;
\if :{?readable}
UPDATE bench_orgs SET org = CASE role WHEN 'large' THEN 'acme' WHEN 'medium' THEN 'globex' WHEN 'small' THEN 'initech'
                                      ELSE 'tenant-' || seq END;
\endif
-- trim the tail so the sum is close to :total
DELETE FROM bench_orgs WHERE seq IN (
    SELECT seq FROM (SELECT seq, sum(n) OVER (ORDER BY seq) AS running FROM bench_orgs) r WHERE running > :total);

-- Value of class c for attribute a of organisation o.
CREATE OR REPLACE FUNCTION bench_value(o text, a text, c int) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '01' || upper(substr(md5(o || ':' || a || ':' || c), 1, 24));
CREATE OR REPLACE FUNCTION bench_key(o text, a text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '01' || upper(substr(md5(o || ':' || a), 1, 24));
\if :{?readable}
CREATE OR REPLACE FUNCTION bench_value(o text, a text, c int) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce((CASE a
        WHEN 'team' THEN ARRAY['platform', 'payments', 'search', 'mobile']
        WHEN 'service' THEN ARRAY['checkout-api', 'ledger', 'indexer', 'push-gateway']
        WHEN 'feature' THEN ARRAY['alerts', 'billing', 'sso', 'exports']
        WHEN 'environment' THEN ARRAY['production', 'staging', 'development', 'qa']
        WHEN 'region' THEN ARRAY['eu-west-1', 'us-east-1', 'ap-south-1', 'sa-east-1']
        WHEN 'source' THEN ARRAY['prometheus', 'datadog', 'sentry', 'cloudwatch'] END)[c + 1],
        a || '-' || c);
CREATE OR REPLACE FUNCTION bench_key(o text, a text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN a;
\endif
-- A class drawn with the documented frequencies, tail of `tail` classes.
CREATE OR REPLACE FUNCTION bench_class(u float8, tail int) RETURNS int
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN u < 0.5 THEN 0 WHEN u < 0.51 THEN 1 WHEN u < 0.5105 THEN 2 WHEN u < 0.51055 THEN 3
                ELSE 4 + floor((u - 0.51055) / 0.48945 * tail)::int END;

INSERT INTO alerts (id, organisation_id, created_at, priority_id, attribute_values)
SELECT left(alerts_ulid_floor(ts), 10) || upper(substr(md5(o.org || g), 1, 16)),
       o.org, ts,
       CASE WHEN pr < 0.1 THEN 1 WHEN pr < 0.3 THEN 2 WHEN pr < 0.7 THEN 3 ELSE 4 END,
       jsonb_build_object(
           bench_key(o.org, 'team'), bench_value(o.org, 'team', bench_class(random(), 40)),
           bench_key(o.org, 'service'), bench_value(o.org, 'service', bench_class(random(), 400)),
           bench_key(o.org, 'feature'), jsonb_build_array(bench_value(o.org, 'feature', bench_class(random(), 60)))
               || CASE WHEN nf >= 2 THEN jsonb_build_array(bench_value(o.org, 'feature', 4 + floor(random() * 60)::int)) ELSE '[]' END
               || CASE WHEN nf >= 3 THEN jsonb_build_array(bench_value(o.org, 'feature', 4 + floor(random() * 60)::int)) ELSE '[]' END,
           bench_key(o.org, 'environment'), bench_value(o.org, 'environment', bench_class(random(), 4)),
           bench_key(o.org, 'region'), bench_value(o.org, 'region', bench_class(random(), 8))
       ) || CASE WHEN extra >= 1 THEN jsonb_build_object(bench_key(o.org, 'customer'), bench_value(o.org, 'customer', bench_class(random(), 1000))) ELSE '{}' END
         || CASE WHEN extra >= 2 THEN jsonb_build_object(bench_key(o.org, 'component'), bench_value(o.org, 'component', bench_class(random(), 100))) ELSE '{}' END
         || CASE WHEN extra >= 3 THEN jsonb_build_object(bench_key(o.org, 'source'), bench_value(o.org, 'source', bench_class(random(), 10))) ELSE '{}' END
         || CASE WHEN extra >= 4 THEN jsonb_build_object(bench_key(o.org, 'cluster'), bench_value(o.org, 'cluster', bench_class(random(), 20))) ELSE '{}' END
         || CASE WHEN extra >= 5 THEN jsonb_build_object(bench_key(o.org, 'owner'), bench_value(o.org, 'owner', bench_class(random(), 200))) ELSE '{}' END
FROM bench_orgs o,
     LATERAL (SELECT g, :'anchor'::timestamptz - random() * interval '365 days' AS ts, random() AS pr,
                     1 + floor(random() * 3)::int AS nf, floor(random() * 6)::int AS extra
              FROM generate_series(1, o.n) g) r;
CREATE INDEX idx_alerts_pagination ON alerts (organisation_id, id DESC);
CREATE INDEX idx_alerts_created_at ON alerts (organisation_id, created_at);
VACUUM ANALYZE alerts;
