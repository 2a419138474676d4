--
-- sky: tc_radec_to_xyz and tc_arcsec_to_chord against their formulas
-- (PostgreSQL's sind and cosd, exact at multiples of 30 degrees): the
-- poles, RA 0 and 360, negative RA, tiny and large angles, NULL in and
-- NULL out, the errors; then two catalogues matched within 1 arcsecond
-- through a generated xyz column against the haversine separation, the
-- best match with k => 1, across RA 0/360 and near a pole.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
DROP SCHEMA IF EXISTS sky CASCADE;
CREATE SCHEMA sky;
SET search_path = sky, public;
RESET client_min_messages;
SET tcjoin.device = auto;
SELECT setseed(0.31);

-- the poles, whatever the RA, and the directions on the axes: exactly
SELECT ra, tc_radec_to_xyz(ra, 90) AS north, tc_radec_to_xyz(ra, -90) AS south
  FROM unnest(ARRAY[0, 45, 123.456, 360, -720, 1e6]::float8[]) ra;
SELECT ra, tc_radec_to_xyz(ra, 0) AS equator
  FROM unnest(ARRAY[0, 90, 180, 270, 360, -90, 450]::float8[]) ra;
-- RA 0 and 360 (and -360, 720, -0) give the same vector, bit for bit;
-- so do -10 and 350, 10.5 and -349.5
SELECT bool_and(tc_radec_to_xyz(0, dec) = tc_radec_to_xyz(360, dec) AND
                tc_radec_to_xyz(0, dec) = tc_radec_to_xyz(-360, dec) AND
                tc_radec_to_xyz(0, dec) = tc_radec_to_xyz(720, dec) AND
                tc_radec_to_xyz(0, dec) = tc_radec_to_xyz('-0', dec) AND
                tc_radec_to_xyz(-10, dec) = tc_radec_to_xyz(350, dec) AND
                tc_radec_to_xyz(10.5, dec) = tc_radec_to_xyz(-349.5, dec)) AS same_vector
  FROM (SELECT random() * 180 - 90 AS dec FROM generate_series(1, 200)
        UNION ALL SELECT unnest(ARRAY[-90, -45, 0, 30, 89.9999999]::float8[])) d;
-- against the formula (cos dec cos ra, cos dec sin ra, sin dec) in
-- PostgreSQL's own degree functions: within 3 units in the last place of
-- 1 everywhere, and exactly where sind and cosd are exact (multiples of
-- 30 degrees); unit vectors within 2 units in the last place
CREATE TABLE dirs AS
  SELECT random() * 720 - 360 AS ra, random() * 180 - 90 AS dec FROM generate_series(1, 2000)
  UNION ALL SELECT random() * 1e-9, random() * 1e-9 - 5e-10 FROM generate_series(1, 100)
  UNION ALL SELECT 360 - random() * 1e-9, 90 - random() * 1e-7 FROM generate_series(1, 100);
SELECT max(greatest(abs(x[1] - cosd(dec) * cosd(ra)), abs(x[2] - cosd(dec) * sind(ra)), abs(x[3] - sind(dec))))
         <= 3 * 2::float8 ^ -53 AS near_formula,
       max(abs(sqrt(x[1] * x[1] + x[2] * x[2] + x[3] * x[3]) - 1)) <= 2 * 2::float8 ^ -53 AS unit
  FROM (SELECT ra, dec, tc_radec_to_xyz(ra, dec) AS x FROM dirs) t;
SELECT bool_and(tc_radec_to_xyz(ra, dec) = ARRAY[cosd(dec) * cosd(ra), cosd(dec) * sind(ra), sind(dec)]) AS exact
  FROM generate_series(-360, 360, 30) ra, generate_series(-90, 90, 30) dec
 WHERE abs(dec) <> 90 AND ra % 90 = 0 AND dec % 90 = 0;
-- tiny components keep their relative accuracy: RA and dec of 1e-9 degrees
SELECT abs(x[2] / radians(1e-9) - 1) < 1e-15 AS tiny_y, abs(x[3] / radians(-1e-9) - 1) < 1e-15 AS tiny_z
  FROM tc_radec_to_xyz(1e-9, -1e-9) x;

-- tc_arcsec_to_chord: 2 sin(theta / 2), against 2 sind(arcsec / 7200)
-- (itself a unit or two off) within 4 units in the last place, from 1e-6
-- arcseconds to 180 degrees
SELECT max(abs(tc_arcsec_to_chord(s) / (2 * sind(s / 7200)) - 1)) <= 4 * 2::float8 ^ -53 AS near_formula
  FROM (SELECT exp(random() * 27 - 14) AS s FROM generate_series(1, 2000)
        UNION ALL SELECT 648000 - random() * 1000 FROM generate_series(1, 200)) t;
-- tiny angles: the chord is the angle in radians; 90 degrees: sqrt(2) to
-- an ulp; near 180 degrees just below 2, then 2 (which 2 sin(theta / 2)
-- rounds to from 647999.99 on); from 180 degrees on, 2 (every two
-- directions lie within); 0 and -0: 0
SELECT abs(tc_arcsec_to_chord(1e-6) / (1e-6 * pi() / 648000) - 1) < 1e-15 AS tiny,
       abs(tc_arcsec_to_chord(1) / (pi() / 648000) - 1) < 1e-11 AS one_arcsec,
       abs(tc_arcsec_to_chord(324000) - sqrt(2::float8)) <= 2::float8 ^ -52 AS quarter_turn,
       tc_arcsec_to_chord(647990) < 2 AS below_half_turn, tc_arcsec_to_chord(647999.99) AS near_half_turn,
       tc_arcsec_to_chord(648000) AS half_turn, tc_arcsec_to_chord(1e300) AS beyond,
       tc_arcsec_to_chord(0) AS zero, tc_arcsec_to_chord('-0') AS minus_zero;
-- increasing with the angle
SELECT bool_and(c1 < c2) AS increasing
  FROM (SELECT tc_arcsec_to_chord(s) AS c1, tc_arcsec_to_chord(s * 1.001) AS c2
          FROM (SELECT exp(random() * 27 - 14) AS s FROM generate_series(1, 500)) a) t;
-- the chord of two directions is the chord of their angle (a pair along a
-- meridian: the angle is the difference of the declinations)
SELECT max(abs(sqrt((x[1] - y[1]) ^ 2 + (x[2] - y[2]) ^ 2 + (x[3] - y[3]) ^ 2) -
               tc_arcsec_to_chord(3600 * d))) < 2e-15 AS along_meridian
  FROM (SELECT tc_radec_to_xyz(ra, dec) AS x, tc_radec_to_xyz(ra, dec + d) AS y, d
          FROM (SELECT random() * 360 AS ra, random() * 170 - 85 AS dec, random() * 2 AS d
                  FROM generate_series(1, 500)) a) t;

-- NULL in, NULL out; the properties a generated column needs
SELECT tc_radec_to_xyz(NULL, 1) IS NULL AS null_ra, tc_radec_to_xyz(1, NULL) IS NULL AS null_dec,
       tc_arcsec_to_chord(NULL) IS NULL AS null_arcsec;
SELECT proname, provolatile, proisstrict, proparallel FROM pg_proc
 WHERE proname IN ('tc_radec_to_xyz', 'tc_arcsec_to_chord') ORDER BY 1;
-- errors
SELECT tc_radec_to_xyz(10, 90.000001);
SELECT tc_radec_to_xyz(10, -91);
SELECT tc_radec_to_xyz('NaN', 10);
SELECT tc_radec_to_xyz('Infinity', 10);
SELECT tc_radec_to_xyz(10, '-Infinity');
SELECT tc_arcsec_to_chord(-1);
SELECT tc_arcsec_to_chord('NaN');
SELECT tc_arcsec_to_chord('Infinity');

-- Two catalogues: b has a counterpart of each source of a, 0.5 to 1.5
-- arcseconds away in a random direction, and a second one 2 arcseconds
-- away for every fifth; sources near RA 0/360 and near the north pole.
CREATE TABLE cat_a (id bigint PRIMARY KEY, ra float8, dec float8,
                    xyz float8[] GENERATED ALWAYS AS (tc_radec_to_xyz(ra, dec)) STORED);
CREATE TABLE cat_b (id bigint PRIMARY KEY, ra float8, dec float8,
                    xyz float8[] GENERATED ALWAYS AS (tc_radec_to_xyz(ra, dec)) STORED);
INSERT INTO cat_a (id, ra, dec)
  SELECT i, CASE WHEN i % 10 = 0 THEN (random() - 0.5) * 0.001 + 360 * (i % 20 / 10)
                 ELSE random() * 360 END,
         CASE WHEN i % 10 = 3 THEN 89.9995 + random() * 0.0004 ELSE degrees(asin(random() * 2 - 1)) END
    FROM generate_series(1, 1500) i;
-- a direction sep arcseconds from (ra, dec) at position angle pa, about
-- (small-angle steps; past the pole, over it)
CREATE FUNCTION moved(ra0 float8, de0 float8, sep float8, pa float8, OUT ra1 float8, OUT de1 float8)
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN abs(d) > 90 THEN r + 180 ELSE r END,
         CASE WHEN d > 90 THEN 180 - d WHEN d < -90 THEN -180 - d ELSE d END
    FROM (SELECT ra0 + sep / 3600 * sin(pa) / cosd(de0) AS r, de0 + sep / 3600 * cos(pa) AS d) s
$$;
INSERT INTO cat_b (id, ra, dec)
  SELECT 100000 + id, m.ra1, m.de1
    FROM (SELECT id, ra, dec, 0.5 + random() AS sep, random() * 2 * pi() AS pa FROM cat_a) s,
         LATERAL moved(s.ra, s.dec, s.sep, s.pa) m;
INSERT INTO cat_b (id, ra, dec)
  SELECT 200000 + id, m.ra1, m.de1
    FROM (SELECT id, ra, dec, random() * 2 * pi() AS pa FROM cat_a WHERE id % 5 = 0) s,
         LATERAL moved(s.ra, s.dec, 2, s.pa) m;
-- the reference: the haversine separation in arcseconds, in plain SQL
CREATE FUNCTION sep_arcsec(ra1 float8, dec1 float8, ra2 float8, dec2 float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
  SELECT 3600 * 2 * degrees(asin(least(1::float8, sqrt(sind((dec2 - dec1) / 2) ^ 2 +
                                                       cosd(dec1) * cosd(dec2) * sind((ra2 - ra1) / 2) ^ 2))))
$$;
-- every pair within 3 arcseconds (their declinations within 0.001 degrees)
CREATE INDEX ON cat_b (dec);
CREATE TABLE ref AS
  SELECT * FROM (SELECT a.id AS id_a, b.id AS id_b, sep_arcsec(a.ra, a.dec, b.ra, b.dec) AS sep
                   FROM cat_a a JOIN cat_b b ON b.dec BETWEEN a.dec - 0.001 AND a.dec + 0.001) p
   WHERE sep <= 3;
-- within 1 arcsecond: the same pairs as the haversine's, but for pairs
-- within 1e-9 arcseconds of the radius (none here), and some of each kind
SELECT (SELECT count(*) FROM ref WHERE sep <= 1) > 500 AS many_in,
       (SELECT count(*) FROM ref WHERE sep > 1) > 500 AS many_out,
       (SELECT count(*) FROM ref WHERE abs(sep - 1) < 1e-9) AS on_the_radius,
       (SELECT count(*) FROM (SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord(1))
                              EXCEPT SELECT id_a, id_b FROM ref WHERE sep <= 1) x) AS extra,
       (SELECT count(*) FROM (SELECT id_a, id_b FROM ref WHERE sep <= 1
                              EXCEPT SELECT id_a, id_b FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord(1))) x) AS missing;
-- the matches across RA 0/360 and near the pole are found
SELECT count(*) FILTER (WHERE abs(a.ra - b.ra) > 180) > 0 AS across_ra_0,
       count(*) FILTER (WHERE a.dec > 89.999) > 0 AS near_pole
  FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord(1)) m
  JOIN cat_a a ON a.id = m.id_a JOIN cat_b b ON b.id = m.id_b;
-- the best match within 2.5 arcseconds: the nearer counterpart, by the haversine too
SELECT count(*) = (SELECT count(DISTINCT id_a) FROM ref WHERE sep <= 2.5) AS one_each,
       bool_and(m.id_b = (SELECT r.id_b FROM ref r WHERE r.id_a = m.id_a ORDER BY r.sep LIMIT 1)) AS nearest,
       bool_and(m.rank = 1) AS rank_1
  FROM tc_join('cat_a', 'xyz', 'cat_b', 'xyz', tc_arcsec_to_chord(2.5), k => 1) m;

SET client_min_messages = warning;
DROP SCHEMA sky CASCADE;
RESET client_min_messages;
