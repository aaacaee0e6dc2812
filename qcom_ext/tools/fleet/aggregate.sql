-- qcom-ext compat's aggregation (DuckDB SQL), the one copy: qcom_ext/tools/fleet/matrix.py
-- runs these statements in order, docs/fleet.md shows them. {paths} is a list of files or
-- globs of newline-delimited reports ('reports/*/*/*.ndjson'); a row's source is its
-- "source" field (qcom-ext compat writes file:line there) or else its file's name. A check's
-- extension and path are read from its id (<extension>/<path>/<case>, checked at intake).

-- name: reports
CREATE OR REPLACE TEMP VIEW reports AS
SELECT coalesce(source, filename) AS source, created, identity_key, identity, checks
FROM read_json(
    {paths},
    format = 'newline_delimited',
    filename = true,
    hive_partitioning = true,
    columns = {
        source: 'VARCHAR',
        created: 'VARCHAR',
        identity_key: 'VARCHAR',
        identity: 'STRUCT(device_name VARCHAR, device_version VARCHAR, driver_version VARCHAR,
            os_name VARCHAR, os_version VARCHAR, architecture VARCHAR, adreno_model VARCHAR,
            compiler_version VARCHAR, compiler_key BIGINT[])',
        checks: 'STRUCT(id VARCHAR, verdict VARCHAR)[]'
    }
);

-- name: loaded
-- The reports in a table of the working database (it spills to disk past the memory
-- limit), each with a row id.
CREATE OR REPLACE TABLE loaded AS
SELECT row_number() OVER () AS rid, * FROM reports;

-- name: ranked
-- Each identity's reports, newest first (ties: the greater source): age 1 counts, the
-- older ones are history. Only the keys: the window never carries the checks.
CREATE OR REPLACE TABLE ranked AS
SELECT
    rid,
    row_number() OVER (
        PARTITION BY identity_key ORDER BY created DESC, source DESC
    ) AS age
FROM loaded;

-- name: totals
SELECT
    count(*) FILTER (WHERE age = 1) AS current,
    count(*) FILTER (WHERE age > 1) AS history,
    count(DISTINCT identity_key) AS identities
FROM loaded JOIN ranked USING (rid);

-- name: matrix
-- Model (or, without one, the device's name) x driver x compiler x extension x path:
-- the verdicts of the checks of each identity's newest report.
SELECT
    identity.adreno_model AS adreno_model,
    CASE WHEN identity.adreno_model IS NULL THEN identity.device_name END AS device_name,
    identity.driver_version AS driver_version,
    identity.compiler_version AS compiler_version,
    split_part(c.id, '/', 1) AS extension,
    split_part(c.id, '/', 2) AS path,
    count(DISTINCT identity_key) AS identities,
    count(*) FILTER (WHERE c.verdict = 'pass') AS pass,
    count(*) FILTER (WHERE c.verdict = 'fail') AS fail,
    count(*) FILTER (WHERE c.verdict = 'crash') AS crash,
    count(*) FILTER (WHERE c.verdict = 'skip') AS skip,
    count(*) FILTER (WHERE c.verdict = 'unchecked') AS unchecked
FROM (
    SELECT identity, identity_key, unnest(checks) AS c
    FROM loaded JOIN ranked USING (rid)
    WHERE age = 1
)
GROUP BY ALL
ORDER BY adreno_model NULLS LAST, device_name, compiler_version, driver_version, extension, path;

-- name: contradictions
-- One identity, one check, different verdicts across its reports (history included;
-- "unchecked" says nothing and is left out): found first, then their reports listed.
WITH verdicts AS (
    SELECT identity_key, source, created, c.id AS check_id, c.verdict AS verdict
    FROM (SELECT identity_key, source, created, unnest(checks) AS c FROM loaded)
    WHERE c.verdict <> 'unchecked'
),
found AS (
    SELECT identity_key, check_id
    FROM verdicts
    GROUP BY identity_key, check_id
    HAVING count(DISTINCT verdict) > 1
)
SELECT
    identity_key,
    check_id,
    any_value(identity.device_name) AS device_name,
    any_value(identity.driver_version) AS driver_version,
    list(DISTINCT verdict ORDER BY verdict) AS verdicts,
    list(source || ' ' || verdict ORDER BY created, source) AS reports
FROM verdicts
    JOIN found USING (identity_key, check_id)
    JOIN (SELECT DISTINCT identity_key, identity FROM loaded) USING (identity_key)
GROUP BY identity_key, check_id
ORDER BY identity_key, check_id;

-- name: outcomes
-- Per model, compiler, extension and path: the newest reports whose checks there failed
-- (a fail or crash) and how many passed (a pass, no fail); quirk proposals read these.
WITH per_report AS (
    SELECT
        identity.adreno_model AS adreno_model,
        identity.compiler_version AS compiler_version,
        split_part(c.id, '/', 1) AS extension,
        split_part(c.id, '/', 2) AS path,
        source || ' ' || identity_key AS report,
        bool_or(c.verdict IN ('fail', 'crash')) AS failed,
        bool_or(c.verdict = 'pass') AS passed
    FROM (
        SELECT identity, identity_key, source, unnest(checks) AS c
        FROM loaded JOIN ranked USING (rid)
        WHERE age = 1
    )
    WHERE identity.compiler_version IS NOT NULL
    GROUP BY ALL
)
SELECT
    adreno_model,
    compiler_version,
    extension,
    path,
    list(report ORDER BY report) FILTER (WHERE failed) AS failing,
    count(*) FILTER (WHERE passed AND NOT failed) AS passing
FROM per_report
GROUP BY ALL
ORDER BY adreno_model NULLS LAST, compiler_version, extension, path;
