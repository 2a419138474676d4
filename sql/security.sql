--
-- security: tc_selfjoin() reads with the caller's rights.  Table and
-- column privileges, row-level security and security-barrier views apply
-- as for the caller's own SELECT; names are never SQL.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS security CASCADE;
CREATE SCHEMA security;
-- Roles are shared by the whole cluster: start from none of ours.
DROP ROLE IF EXISTS tcjoin_test_owner;
DROP ROLE IF EXISTS tcjoin_test_reader;
DROP ROLE IF EXISTS tcjoin_test_colid;
DROP ROLE IF EXISTS tcjoin_test_nopriv;
RESET client_min_messages;
SET search_path = security, public;

CREATE ROLE tcjoin_test_owner;
CREATE ROLE tcjoin_test_reader;
CREATE ROLE tcjoin_test_colid;
CREATE ROLE tcjoin_test_nopriv;
GRANT USAGE ON SCHEMA security
    TO tcjoin_test_owner, tcjoin_test_reader, tcjoin_test_colid, tcjoin_test_nopriv;

-- Neither function runs with its owner's rights.
SELECT proname, prosecdef, proconfig, provolatile
  FROM pg_proc WHERE proname IN ('tc_selfjoin', 'tc_last_stats') ORDER BY proname;
-- Anyone may call them.
SELECT has_function_privilege('tcjoin_test_nopriv', 'tc_selfjoin(regclass, name, double precision, name, boolean, boolean, text, text)', 'EXECUTE') AS selfjoin,
       has_function_privilege('tcjoin_test_nopriv', 'tc_last_stats()', 'EXECUTE') AS last_stats;

-- Reference join, run with the rights of whoever calls it.
CREATE FUNCTION ref_join(rel regclass, vec name, eps float8, id name)
RETURNS TABLE (id_a bigint, id_b bigint, dist float8)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (
             SELECT %1$I::bigint AS i, %2$I::float8[] AS v FROM %3$s WHERE %2$I IS NOT NULL)
         SELECT a.i, b.i, r.d
           FROM p a JOIN p b ON a.i < b.i,
                LATERAL (SELECT sqrt(sum((x - y) * (x - y))) AS d
                           FROM unnest(a.v, b.v) AS u(x, y)) r
          WHERE r.d <= $1', id, vec, rel)
    USING eps;
END $$;
CREATE FUNCTION diff(q1 text, q2 text, OUT rows_1 bigint, OUT rows_2 bigint,
                     OUT only_1 bigint, OUT only_2 bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'WITH a AS MATERIALIZED (%s), b AS MATERIALIZED (%s)
         SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b),
                (SELECT count(*) FROM (TABLE a EXCEPT ALL TABLE b) x),
                (SELECT count(*) FROM (TABLE b EXCEPT ALL TABLE a) x)', q1, q2)
    INTO rows_1, rows_2, only_1, only_2;
END $$;

-- 60 points on a 6 x 10 integer grid, each labelled with a role name.
CREATE TABLE pts (id integer PRIMARY KEY, alt bigint UNIQUE, vec real[], label name);
INSERT INTO pts
    SELECT i, 1000 + i, ARRAY[i % 6, i / 6],
           CASE WHEN i % 3 = 0 THEN 'tcjoin_test_reader' ELSE 'tcjoin_test_owner' END
      FROM generate_series(0, 59) i;
ALTER TABLE pts OWNER TO tcjoin_test_owner;
-- What the superuser sees.
CREATE TABLE su_result AS SELECT * FROM tc_selfjoin('pts', 'vec', 1.5);
SELECT * FROM diff('TABLE su_result', $$SELECT * FROM ref_join('pts', 'vec', 1.5, 'id')$$);
CREATE TABLE su_result_3 AS SELECT * FROM tc_selfjoin('pts', 'vec', 3);
SELECT * FROM diff('TABLE su_result_3', $$SELECT * FROM ref_join('pts', 'vec', 3, 'id')$$);
GRANT SELECT ON su_result, su_result_3 TO PUBLIC;

--
-- Table privileges.
--
SET ROLE tcjoin_test_nopriv;
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5);
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, 'alt');
-- This role has run no join: no statistics, not the superuser's.
SELECT count(*) FROM tc_last_stats();
RESET ROLE;
-- A refused join leaves the statistics of the last join alone.
SELECT n, eps FROM tc_last_stats();

--
-- tc_last_stats() shows a role only the statistics of its own joins: their
-- counts describe rows only the role that ran the join may read.  The join
-- belongs to the user whose rights read the table (current_user), so SET
-- ROLE, SET SESSION AUTHORIZATION and SECURITY DEFINER functions all count.
--
CREATE TABLE secret (id integer PRIMARY KEY, vec float8[]);
INSERT INTO secret SELECT i, ARRAY[i, 0] FROM generate_series(1, 7) i;
ALTER TABLE secret OWNER TO tcjoin_test_owner;
CREATE TABLE open_pts (id integer PRIMARY KEY, vec float8[]);
INSERT INTO open_pts VALUES (1, '{0,0}'), (2, '{0,1}'), (3, '{5,5}');
GRANT SELECT ON open_pts TO tcjoin_test_reader, tcjoin_test_owner;
SET ROLE tcjoin_test_owner;
SELECT count(*) FROM tc_selfjoin('secret', 'vec', 1.5);
SELECT n, pairs FROM tc_last_stats();
SET ROLE tcjoin_test_reader;
SELECT count(*) FROM secret;
SELECT count(*) FROM tc_last_stats();
SET ROLE tcjoin_test_owner;
SELECT n, pairs FROM tc_last_stats();
-- The superuser is another user too.
RESET ROLE;
SELECT count(*) FROM tc_last_stats();
-- The reader's own join is the reader's, and the last join of the session.
SET ROLE tcjoin_test_reader;
SELECT count(*) FROM tc_selfjoin('open_pts', 'vec', 1.5);
SELECT n, pairs FROM tc_last_stats();
SET ROLE tcjoin_test_owner;
SELECT count(*) FROM tc_last_stats();
RESET ROLE;
-- SET SESSION AUTHORIZATION changes the user as SET ROLE does.
SET SESSION AUTHORIZATION tcjoin_test_owner;
SELECT count(*) FROM tc_last_stats();
SELECT count(*) FROM tc_selfjoin('secret', 'vec', 2.5);
SELECT n, pairs FROM tc_last_stats();
RESET SESSION AUTHORIZATION;
SELECT count(*) FROM tc_last_stats();
-- A SECURITY DEFINER function reads with its owner's rights, so its join is
-- its owner's: the function sees the statistics, its caller does not.
CREATE FUNCTION secret_join(eps float8, OUT rows bigint, OUT stats_pairs bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = security, public AS $$
BEGIN
    SELECT count(*) INTO rows FROM tc_selfjoin('secret', 'vec', eps);
    SELECT pairs INTO stats_pairs FROM tc_last_stats();
END $$;
CREATE FUNCTION owner_stats(OUT n bigint, OUT pairs bigint) RETURNS SETOF record
LANGUAGE sql SECURITY DEFINER SET search_path = security, public AS $$
    SELECT n, pairs FROM tc_last_stats()
$$;
ALTER FUNCTION secret_join(float8) OWNER TO tcjoin_test_owner;
ALTER FUNCTION owner_stats() OWNER TO tcjoin_test_owner;
GRANT EXECUTE ON FUNCTION secret_join(float8), owner_stats() TO tcjoin_test_reader;
SET ROLE tcjoin_test_reader;
SELECT * FROM secret_join(3.5);
SELECT count(*) FROM tc_last_stats();
SELECT * FROM owner_stats();
-- ... and the reader's own join is not the function owner's.
SELECT count(*) FROM tc_selfjoin('open_pts', 'vec', 1.5);
SELECT n, pairs FROM tc_last_stats();
SELECT count(*) FROM owner_stats();
RESET ROLE;
DROP FUNCTION secret_join(float8), owner_stats();
DROP TABLE secret, open_pts;

--
-- Column privileges: the join reads the id and vector columns, no others.
--
GRANT SELECT (id) ON pts TO tcjoin_test_colid;
SET ROLE tcjoin_test_colid;
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5);
RESET ROLE;
GRANT SELECT (vec) ON pts TO tcjoin_test_nopriv;
SET ROLE tcjoin_test_nopriv;
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5);
RESET ROLE;
GRANT SELECT (vec) ON pts TO tcjoin_test_colid;
SET ROLE tcjoin_test_colid;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$, 'TABLE su_result');
-- ... and not alt, unless it is the id column.
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, 'alt');
RESET ROLE;
GRANT SELECT (alt) ON pts TO tcjoin_test_colid;
SET ROLE tcjoin_test_colid;
SELECT * FROM diff($$SELECT id_a - 1000, id_b - 1000, dist FROM tc_selfjoin('pts', 'vec', 1.5, 'alt')$$,
                   'TABLE su_result');
RESET ROLE;
REVOKE ALL ON pts FROM tcjoin_test_colid, tcjoin_test_nopriv;

--
-- Row-level security: the join sees the rows the caller's SELECT sees.
--
GRANT SELECT ON pts TO tcjoin_test_reader;
ALTER TABLE pts ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON pts FOR SELECT USING (label = current_user);
SET ROLE tcjoin_test_reader;
SELECT count(*) AS visible FROM pts;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 3)$$,
                   $$SELECT * FROM ref_join('pts', 'vec', 3, 'id')$$);
-- The same as the superuser's full join restricted to pairs of visible rows.
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 3)$$,
                   $$SELECT * FROM su_result_3 WHERE id_a % 3 = 0 AND id_b % 3 = 0$$);
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE id_a % 3 = 0 AND id_b % 3 = 0) AS visible_pairs
  FROM tc_selfjoin('pts', 'vec', 3);
SELECT n FROM tc_last_stats();
-- With row_security off, the query is refused rather than filtered.
SET row_security = off;
SELECT * FROM tc_selfjoin('pts', 'vec', 3);
RESET row_security;
RESET ROLE;
-- The owner is exempt from its table's policies ...
SET ROLE tcjoin_test_owner;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$, 'TABLE su_result');
RESET ROLE;
-- ... unless they are forced.
ALTER TABLE pts FORCE ROW LEVEL SECURITY;
SET ROLE tcjoin_test_owner;
SELECT count(*) AS visible FROM pts;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$,
                   $$SELECT * FROM ref_join('pts', 'vec', 1.5, 'id')$$);
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$,
                   $$SELECT * FROM su_result WHERE id_a % 3 <> 0 AND id_b % 3 <> 0$$);
SELECT n FROM tc_last_stats();
RESET ROLE;
-- A superuser bypasses row-level security.
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('pts', 'vec', 1.5)$$, 'TABLE su_result');
ALTER TABLE pts NO FORCE ROW LEVEL SECURITY;
ALTER TABLE pts DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON pts FROM tcjoin_test_reader;

--
-- Views: a security_barrier view grants access to part of a table; a
-- security_invoker view does not lend its owner's rights.
--
CREATE VIEW low_rows WITH (security_barrier) AS
    SELECT id, vec FROM pts WHERE id < 30;
CREATE VIEW low_rows_invoker WITH (security_invoker) AS
    SELECT id, vec FROM pts WHERE id < 30;
ALTER VIEW low_rows OWNER TO tcjoin_test_owner;
ALTER VIEW low_rows_invoker OWNER TO tcjoin_test_owner;
GRANT SELECT ON low_rows, low_rows_invoker TO tcjoin_test_reader;
SET ROLE tcjoin_test_reader;
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5);
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('low_rows', 'vec', 1.5, 'id')$$,
                   $$SELECT * FROM su_result WHERE id_b < 30$$);
SELECT * FROM tc_selfjoin('low_rows_invoker', 'vec', 1.5, 'id');
RESET ROLE;

--
-- Names are looked up once, as given: the relation by OID, the columns by
-- name; nothing is ever pasted into SQL.
--
CREATE TABLE canary (x integer);
INSERT INTO canary VALUES (1);
SELECT * FROM tc_selfjoin('pts; DROP TABLE canary; --', 'vec', 1.5);
SELECT * FROM tc_selfjoin('"pts; DROP TABLE canary; --"', 'vec', 1.5);
SELECT * FROM tc_selfjoin('pts', 'vec FROM pts; DROP TABLE canary; --', 1.5);
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, 'id FROM pts; DROP TABLE canary; --');
SELECT * FROM tc_selfjoin('pts', 'vec", "vec" FROM pts; DROP TABLE canary; --', 1.5);
SELECT * FROM tc_selfjoin('pts', 'vec', 1.5, method => 'brute''; DROP TABLE canary; --');
-- A table and columns so named work like any other.
CREATE TABLE "pts; DROP TABLE canary; --" (
    "id FROM pts; DROP TABLE canary; --" integer PRIMARY KEY,
    "vec"", ""vec"" FROM pts; DROP TABLE canary; --" real[]);
INSERT INTO "pts; DROP TABLE canary; --" SELECT id, vec FROM pts;
SELECT * FROM diff(
    $q$SELECT * FROM tc_selfjoin('"pts; DROP TABLE canary; --"',
                                 'vec", "vec" FROM pts; DROP TABLE canary; --', 1.5)$q$,
    'TABLE su_result');
SELECT * FROM diff(
    $q$SELECT * FROM tc_selfjoin('security."pts; DROP TABLE canary; --"',
                                 'vec", "vec" FROM pts; DROP TABLE canary; --', 1.5,
                                 'id FROM pts; DROP TABLE canary; --')$q$,
    'TABLE su_result');
SELECT * FROM canary;

-- The relation read is the one the regclass names, however search_path is
-- set when the join runs: a temporary table of the same name does not
-- shadow it.
CREATE TABLE shadowed (id integer PRIMARY KEY, vec real[]);
INSERT INTO shadowed SELECT id, vec FROM pts;
CREATE TEMP TABLE shadowed (id integer PRIMARY KEY, vec real[]);
INSERT INTO shadowed VALUES (1, '{0}'), (2, '{0}');
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('security.shadowed', 'vec', 1.5)$$,
                   'TABLE su_result');
SELECT * FROM tc_selfjoin('shadowed', 'vec', 1.5);
SET search_path = pg_temp, security, public;
SELECT * FROM diff($$SELECT * FROM tc_selfjoin('security.shadowed', 'vec', 1.5)$$,
                   'TABLE security.su_result');
SET search_path = security, public;
DROP TABLE pg_temp.shadowed;

SET client_min_messages = warning;
DROP SCHEMA security CASCADE;
DROP OWNED BY tcjoin_test_owner, tcjoin_test_reader, tcjoin_test_colid, tcjoin_test_nopriv;
DROP ROLE tcjoin_test_owner;
DROP ROLE tcjoin_test_reader;
DROP ROLE tcjoin_test_colid;
DROP ROLE tcjoin_test_nopriv;
RESET client_min_messages;
