--
-- Streaming: with tcjoin.gpu_memory_limit far below what the join takes,
-- FP16 brute force on a GPU goes in blocks of rows (here three), and
-- its answer is still the contract's, bit for bit.  On a machine without a
-- GPU the setting has no effect and the same checks hold, so one expected
-- file serves both.  Fresh random data each run; only data-independent
-- values are printed.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS tcjoin;
RESET client_min_messages;

CREATE TABLE stream_pts AS
    SELECT i AS id, ARRAY[random(), random(), random()]::real[] AS vec
      FROM generate_series(1, 6000) i;

-- The reference: every pair within 0.1 (about 25 neighbours a point), its
-- distance summed in float8 in index order as the contract says.  The box
-- test only spares the sums of pairs that cannot qualify: a coordinate
-- apart by more than eps puts the distance above eps.
CREATE TABLE stream_ref AS
    SELECT id_a, id_b, dist, float8send(dist) AS bits
      FROM (SELECT a.id AS id_a, b.id AS id_b,
                   (SELECT sqrt(sum((x::float8 - y::float8) * (x::float8 - y::float8)))
                      FROM unnest(a.vec, b.vec) AS u(x, y)) AS dist
              FROM stream_pts a JOIN stream_pts b ON a.id < b.id
               AND abs(a.vec[1]::float8 - b.vec[1]::float8) <= 0.1
               AND abs(a.vec[2]::float8 - b.vec[2]::float8) <= 0.1
               AND abs(a.vec[3]::float8 - b.vec[3]::float8) <= 0.1) s
     WHERE dist <= 0.1;

-- The whole join would take about 3.5 MB of GPU memory (2 MB of it result
-- buffers, the least a join takes); 3 MB leaves room for blocks of 2048
-- rows, so the 6000 points go in three.
-- Tensor cores as by default (the suite may run with them off), so that a
-- GPU of compute capability 8.0 or more takes FP16.
SET tcjoin.tensor_cores = auto;
SET tcjoin.gpu_memory_limit = '3MB';
CREATE TABLE stream_got AS
    SELECT id_a, id_b, dist, float8send(dist) AS bits
      FROM tc_selfjoin('stream_pts', 'vec', 0.1, id_column => 'id', method => 'brute');
-- Three blocks where a GPU ran it; no blocks (NULL) on the CPU.
SELECT method = 'brute' AS brute, coalesce(gpu_blocks = 3, device = 'cpu') AS blocks_ok
  FROM tc_last_stats();

-- With tensor cores off, brute force on a GPU runs on FP64 CUDA cores over
-- the whole set at once (a grid join of one cell), which does not stream:
-- where the limit cannot hold it, an error names the setting.  The CPU
-- ignores the limit and runs the join.  Either way the same line prints.
SET tcjoin.tensor_cores = off;
DO $$
BEGIN
    PERFORM count(*) FROM tc_selfjoin('stream_pts', 'vec', 0.1, id_column => 'id', method => 'brute');
    IF (SELECT device FROM tc_last_stats()) <> 'cpu' THEN
        RAISE EXCEPTION 'FP64 brute force ran on a GPU in 3 MB';
    END IF;
    RAISE NOTICE 'FP64 brute force under 3 MB: ran on the CPU or named the limit';
EXCEPTION WHEN others THEN
    IF SQLERRM NOT LIKE 'tcjoin: tcjoin.gpu_memory_limit (3 MB) is too small for this join: it needs more than % MB' THEN
        RAISE;
    END IF;
    RAISE NOTICE 'FP64 brute force under 3 MB: ran on the CPU or named the limit';
END $$;
RESET tcjoin.tensor_cores;
RESET tcjoin.gpu_memory_limit;

SELECT (SELECT count(*) FROM stream_ref) > 50000 AS enough_pairs,
       (SELECT count(*) FROM (SELECT * FROM stream_ref EXCEPT ALL SELECT * FROM stream_got) m) AS missing,
       (SELECT count(*) FROM (SELECT * FROM stream_got EXCEPT ALL SELECT * FROM stream_ref) e) AS extra;

DROP TABLE stream_pts, stream_ref, stream_got;
