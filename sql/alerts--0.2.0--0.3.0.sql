-- alerts 0.2.0 -> 0.3.0. Hand-written and frozen once 0.3.0 is released;
-- tests/shell/upgrade.sh checks that 0.2.0 (and 0.1.0) upgraded through it
-- build exactly the objects of a fresh install of sql/alerts.sql.
--
-- 0.3.0 changes no SQL object so far: the library was reorganised, and it
-- builds for PostgreSQL 15, 16 and 18.
\echo Use "ALTER EXTENSION alerts UPDATE TO '0.3.0'" to load this file. \quit
