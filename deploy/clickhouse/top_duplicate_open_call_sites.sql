-- Top call sites of duplicate opens: with once --stacks, each record of a
-- duplicate_open names its busiest call sites' first frames
-- (code.stacktrace, "13× load_config ← main (config.c:42)" a line). Ranked
-- by the time the repeats cost, across nodes and programs, last 7 days.
WITH findings AS (
    SELECT
        LogAttributes['once.comm']                            AS program,
        LogAttributes['once.subject']                         AS file,
        LogAttributes['code.stacktrace']                      AS sites,
        max(toUInt64OrZero(LogAttributes['once.wasted_ns']))  AS wasted_ns,
        max(toUInt64OrZero(LogAttributes['once.count']))      AS opens
    FROM otel.otel_logs
    WHERE ScopeName = 'github.com/oncetool/once'
      AND LogAttributes['once.kind'] = 'duplicate_open'
      AND LogAttributes['code.stacktrace'] != ''
      AND Timestamp >= now() - INTERVAL 7 DAY
    GROUP BY ResourceAttributes['k8s.node.name'], ResourceAttributes['host.name'], LogAttributes['process.pid'], LogAttributes['once.start_ns'],
             program, file, sites
)
SELECT
    -- The busiest site: the first line, its count dropped.
    replaceRegexpOne(splitByChar('\n', sites)[1], '^[0-9]+× ', '') AS call_site,
    groupUniqArray(5)(program)            AS programs,
    groupUniqArray(5)(file)               AS files,
    count()                               AS findings,
    sum(opens)                            AS opens,
    round(sum(wasted_ns) / 1e9, 3)        AS wasted_seconds
FROM findings
GROUP BY call_site
ORDER BY wasted_seconds DESC
LIMIT 20;
