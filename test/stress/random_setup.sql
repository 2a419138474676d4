-- Functions for test/suites/sql_random.sh: random shapes, values and
-- arguments through the SQL surface, each case checked against plain SQL
-- (the contract's distance in float8, over unnest, in index order), or, for
-- values the contract refuses, against the error the README names.
--
-- What varies, beyond test/suites/stress.sh's checked joins: the id column's
-- type (smallint, integer, bigint) and whether it is the primary key, named
-- by id_column, or a unique index's; arrays with other lower bounds; tables,
-- views and partitioned tables; rows with NULL vectors (skipped); values on
-- a lattice whose distances fall exactly on eps, duplicates, tiny and large
-- magnitudes; eps 0; include_self; every method; tc_join of two relations,
-- of mixed element types, and of a relation with itself; and bad values (a
-- NULL element, NaN, infinities, an empty or a 2-D array, another dimension)
-- at a random row.
SET client_min_messages = warning;

CREATE FUNCTION rnd_pick(VARIADIC xs text[]) RETURNS text LANGUAGE sql AS $$
    SELECT xs[1 + floor(random() * array_length(xs, 1))::int]
$$;

-- A random coordinate of a kind: uniform, lattice, tiny, large.
CREATE FUNCTION rnd_coord(kind text) RETURNS float8 LANGUAGE sql AS $$
    SELECT CASE kind
        WHEN 'lattice' THEN floor(random() * 5) * 0.25
        WHEN 'tiny' THEN (random() - 0.5) * 1e-30
        WHEN 'large' THEN (random() - 0.5) * 1e30
        ELSE random() END
$$;

-- Fill table tbl (id, vec, with the types given) with n random points of d
-- dimensions; a share of duplicates and of NULL vectors; lower bound lb.
CREATE FUNCTION rnd_fill(tbl text, n int, d int, kind text, lb int, with_nulls boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v float8[];
    prev float8[];
BEGIN
    FOR i IN 1 .. n LOOP
        IF prev IS NOT NULL AND random() < 0.1 THEN
            v := prev;                              -- a duplicate point
        ELSE
            v := ARRAY(SELECT rnd_coord(kind) FROM generate_series(1, d));
        END IF;
        prev := v;
        IF with_nulls AND random() < 0.05 THEN
            EXECUTE format('INSERT INTO %I VALUES ($1, NULL)', tbl) USING i;
        ELSE
            -- other lower bounds: the same values at indices lb .. lb + d - 1
            EXECUTE format('INSERT INTO %I VALUES ($1, $2)', tbl)
                USING i, CASE WHEN lb = 1 THEN v
                              ELSE array_fill(0::float8, ARRAY[d], ARRAY[lb]) END;
            IF lb <> 1 THEN
                FOR k IN 1 .. d LOOP
                    EXECUTE format('UPDATE %I SET vec[%s] = $1 WHERE id = $2', tbl, lb + k - 1)
                        USING v[k], i;
                END LOOP;
            END IF;
        END IF;
    END LOOP;
END $$;

-- The contract's distance between two vectors, by position (not index).
CREATE FUNCTION ref_dist(a float8[], b float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
    SELECT sqrt(sum((x - y) * (x - y))) FROM unnest(a, b) AS u(x, y)
$$;

CREATE TABLE rnd_log (seed float8, what text, ok boolean, detail text);

-- One case; returns what it ran.  Appends to rnd_log; a wrong answer is a
-- row with ok false and the case's description.  The seed is set before
-- rnd_case_body's declarations draw their values, so that a seed replays
-- its case.
CREATE FUNCTION rnd_case_body(seed float8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    idt text := rnd_pick('smallint', 'integer', 'bigint');
    vt text := rnd_pick('real', 'double precision');
    vt2 text := rnd_pick('real', 'double precision');
    kind text := rnd_pick('uniform', 'uniform', 'lattice', 'tiny', 'large');
    form text := rnd_pick('pk', 'pk', 'id_column', 'unique', 'view', 'partitioned');
    method text := rnd_pick('auto', 'grid', 'brute');
    d int;
    n int := floor(random() * 160)::int;
    n2 int := floor(random() * 120)::int;
    lb int := CASE WHEN random() < 0.2 THEN floor(random() * 5)::int - 2 ELSE 1 END;
    incl boolean := random() < 0.3;
    nulls boolean := random() < 0.5;    -- rows with NULL vectors (the loaded ids then have gaps)
    eps float8;
    two text := rnd_pick('no', 'no', 'other', 'itself');
    bad text := rnd_pick('none', 'none', 'none', 'none', 'none', 'none', 'none', 'none', 'null_elem', 'nan', 'inf', 'empty', '2d', 'dims');
    src text;
    src2 text;
    idcol text;
    desc_ text;
    missing bigint;
    extra bigint;
    err text;
    want_err text;
BEGIN
    d := CASE WHEN random() < 0.85 THEN 1 + floor(random() * 8)::int ELSE 9 + floor(random() * 60)::int END;
    eps := CASE WHEN random() < 0.1 THEN 0
                WHEN kind = 'lattice' THEN rnd_pick('0.25', '0.5', '0.3535533905932738', '0.75')::float8
                WHEN kind = 'tiny' THEN random() * 1e-30 * sqrt(d)
                WHEN kind = 'large' THEN random() * 1e30 * sqrt(d)
                ELSE random() * 0.4 * sqrt(d) END;
    IF n = 0 AND bad <> 'none' THEN n := 1; END IF;
    desc_ := format('seed %s: n %s d %s %s[] ids %s (%s) %s values lower bound %s eps %s method %s include_self %s two %s (n %s, %s[]) bad %s null vectors %s',
                    seed, n, d, vt, idt, form, kind, lb, eps, method, incl, two, n2, vt2, bad, nulls);

    DROP VIEW IF EXISTS rp_view;
    DROP TABLE IF EXISTS rp_a, rp_b, rp_part, rp_other CASCADE;
    IF form = 'partitioned' THEN
        EXECUTE format('CREATE TABLE rp_part (id %s, vec %s[], PRIMARY KEY (id)) PARTITION BY RANGE (id)', idt, vt);
        EXECUTE format('CREATE TABLE rp_a PARTITION OF rp_part FOR VALUES FROM (MINVALUE) TO (80)');
        EXECUTE format('CREATE TABLE rp_b PARTITION OF rp_part FOR VALUES FROM (80) TO (MAXVALUE)');
        PERFORM rnd_fill('rp_part', n, d, kind, lb, nulls);
        src := 'rp_part'; idcol := NULL;
    ELSE
        EXECUTE format('CREATE TABLE rp_a (id %s %s, vec %s[])', idt,
                       CASE WHEN form IN ('pk', 'view') THEN 'PRIMARY KEY' ELSE '' END, vt);
        IF form = 'unique' THEN CREATE UNIQUE INDEX ON rp_a (id); END IF;
        PERFORM rnd_fill('rp_a', n, d, kind, lb, nulls);
        src := 'rp_a';
        idcol := CASE WHEN form IN ('id_column', 'unique') THEN 'id' END;
        IF form = 'view' THEN
            CREATE VIEW rp_view AS SELECT id AS ident, vec FROM rp_a;
            src := 'rp_view'; idcol := 'ident';
        END IF;
    END IF;

    -- a bad value at a random row (the reference is then the error)
    IF bad <> 'none' THEN
        EXECUTE format('UPDATE %I SET vec = %s WHERE id = (SELECT min(id) + floor(random() * count(*))::int FROM %I)',
            CASE WHEN form = 'partitioned' THEN 'rp_part' ELSE 'rp_a' END,
            CASE bad WHEN 'null_elem' THEN format('array_fill(1::float8, ARRAY[%s])::%s[] || NULL::%s', d, vt, vt)
                     WHEN 'nan' THEN format('array_fill(''NaN''::float8, ARRAY[%s])', d)
                     WHEN 'inf' THEN format('array_fill(''-Infinity''::float8, ARRAY[%s])', d)
                     WHEN 'empty' THEN '''{}'''
                     WHEN '2d' THEN '''{{1,2},{3,4}}'''
                     ELSE format('array_fill(1::float8, ARRAY[%s])', d + 1) END,
            CASE WHEN form = 'partitioned' THEN 'rp_part' ELSE 'rp_a' END);
        want_err := CASE bad WHEN 'null_elem' THEN 'NULL not allowed in vector'
                             WHEN 'nan' THEN 'NaN not allowed in vector'
                             WHEN 'inf' THEN 'infinite value not allowed in vector'
                             WHEN 'empty' THEN 'vector must have at least 1 dimension'
                             WHEN '2d' THEN 'vector must be a one-dimensional array'
                             ELSE 'different vector dimensions' END;
        -- a table whose only vector is the bad one: no dimension to differ from
        IF bad = 'dims' THEN
            EXECUTE format('SELECT CASE WHEN count(vec) < 2 THEN NULL ELSE $1 END FROM %I',
                           CASE WHEN form = 'partitioned' THEN 'rp_part' ELSE 'rp_a' END)
                INTO want_err USING want_err;
        END IF;
    END IF;

    -- ids with gaps, or descending (the output looks each one up), or as filled (1 .. n)
    IF random() < 0.4 THEN
        -- through negative ids, so that no step meets a taken one
        EXECUTE format('UPDATE %1$I SET id = -id; UPDATE %1$I SET id = %2$s',
                       CASE WHEN form = 'partitioned' THEN 'rp_part' ELSE 'rp_a' END,
                       rnd_pick('-id * 7', '1000 + id'));
        desc_ := desc_ || ' (ids renumbered)';
    END IF;

    IF two <> 'no' THEN
        IF two = 'other' THEN
            EXECUTE format('CREATE TABLE rp_other (id bigint PRIMARY KEY, vec %s[])', vt2);
            PERFORM rnd_fill('rp_other', n2, d, kind, 1, true);
            src2 := 'rp_other';
            -- the bad row alone in its relation: it differs from the other relation's vectors
            IF bad = 'dims' AND want_err IS NULL AND (SELECT count(vec) FROM rp_other) > 0 THEN
                want_err := 'different vector dimensions';
            END IF;
        ELSE
            src2 := src;
        END IF;
    END IF;

    -- the join and the reference into temp tables
    CREATE TEMP TABLE IF NOT EXISTS rj (id_a bigint, id_b bigint, dist float8);
    CREATE TEMP TABLE IF NOT EXISTS rr (id_a bigint, id_b bigint, dist float8);
    TRUNCATE rj, rr;
    BEGIN
        IF two = 'no' THEN
            EXECUTE 'INSERT INTO rj SELECT * FROM tc_selfjoin($1::regclass, ''vec'', $2, id_column => $3, include_self => $4, method => $5)'
                USING src, eps, idcol, incl, method;
        ELSE
            EXECUTE 'INSERT INTO rj SELECT * FROM tc_join($1::regclass, ''vec'', $2::regclass, ''vec'', $3, id_column_a => $4, id_column_b => $5, method => $6)'
                USING src, src2, eps, idcol, CASE WHEN two = 'itself' THEN idcol END, method;
        END IF;
    EXCEPTION WHEN OTHERS THEN
        err := sqlerrm;
    END;

    IF bad <> 'none' AND want_err IS NOT NULL THEN
        INSERT INTO rnd_log VALUES (seed, 'error', coalesce(err LIKE want_err || '%', false),
                                    desc_ || ': got ' || coalesce(err, 'no error') || ', want ' || want_err);
        RETURN 'error';
    END IF;
    IF err IS NOT NULL THEN
        INSERT INTO rnd_log VALUES (seed, 'join', false, desc_ || ': error ' || err);
        RETURN 'join';
    END IF;

    -- the reference: plain SQL, in float8, over the vectors as stored
    IF two = 'no' THEN
        EXECUTE format($q$
            INSERT INTO rr
            SELECT least(a.i, b.i), greatest(a.i, b.i), ref_dist(a.v, b.v)
              FROM (SELECT %1$s::bigint AS i, vec::float8[] AS v FROM %2$I WHERE vec IS NOT NULL) a
              JOIN (SELECT %1$s::bigint AS i, vec::float8[] AS v FROM %2$I WHERE vec IS NOT NULL) b
                ON a.i < b.i OR (%3$L AND a.i = b.i)
             WHERE ref_dist(a.v, b.v) <= %4$s::float8$q$,
            coalesce(idcol, 'id'), src, incl, eps);
    ELSE
        EXECUTE format($q$
            INSERT INTO rr
            SELECT a.i, b.i, ref_dist(a.v, b.v)
              FROM (SELECT %1$s::bigint AS i, vec::float8[] AS v FROM %2$I WHERE vec IS NOT NULL) a,
                   (SELECT %3$s::bigint AS i, vec::float8[] AS v FROM %4$I WHERE vec IS NOT NULL) b
             WHERE ref_dist(a.v, b.v) <= %5$s::float8$q$,
            coalesce(idcol, 'id'), src, CASE WHEN two = 'itself' THEN coalesce(idcol, 'id') ELSE 'id' END,
            CASE WHEN two = 'itself' THEN src ELSE 'rp_other' END, eps);
    END IF;
    SELECT count(*) INTO missing FROM (TABLE rr EXCEPT ALL TABLE rj) x;
    SELECT count(*) INTO extra FROM (TABLE rj EXCEPT ALL TABLE rr) x;
    INSERT INTO rnd_log VALUES (seed, 'join', missing = 0 AND extra = 0,
                                desc_ || format(': %s rows, %s missing, %s extra', (SELECT count(*) FROM rj), missing, extra));
    RETURN 'join';
END $$;

CREATE FUNCTION rnd_case(seed float8) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM setseed(seed);
    RETURN rnd_case_body(seed);
END $$;
