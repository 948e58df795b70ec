-- alerts_bloom_stats on the generated table of query.sql, then on a table
-- whose rows carry too many elements, missing and stale bitmaps.
SELECT rows, round(elements_mean::numeric, 1) AS mean, elements_p99, elements_max,
       round(bitmap_fill_mean::numeric, 3) AS fill, expected_fp_rate_p99 < 0.01 AS fp_below_1pct,
       rows_without_bitmap, stale_bitmaps, advice
FROM alerts_bloom_stats('alerts');
SELECT rows > 0 AND rows < 100000 AS sampled FROM alerts_bloom_stats('alerts', sample_percent => 10);
CREATE TABLE wide (attrs jsonb, bm bit(512));
INSERT INTO wide SELECT (SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 80 + g % 2) i), NULL FROM generate_series(1, 100) g;
INSERT INTO wide VALUES ('{"a": 1}', alerts_bloom('{"a": 2}'));
SELECT rows, elements_p99, elements_max, round(expected_fp_rate_p99::numeric, 3) AS fp_p99, rows_without_bitmap, stale_bitmaps, advice
FROM alerts_bloom_stats('wide', 'attrs', 'bm');
SELECT * FROM alerts_bloom_stats('wide', 'attrs', 'bm', 0);
SELECT * FROM alerts_bloom_stats('wide', 'nope', 'bm');
