-- Top programs by wasted time across nodes, over the last day: each of
-- once's finding records (ScopeName) carries the time its avoidable calls
-- cost (once.wasted_ns) and the program that made them (once.comm; the
-- executable in process.executable.path).
--
-- Watch sends each finding once, when it is made (as its JSON lines do);
-- a record an export retried may still arrive twice, so the sum per
-- finding is its largest record's (argMax over once.wasted_ns per node,
-- pid, image and kind+subject), not the sum of its records.
WITH findings AS (
    SELECT
        coalesce(nullIf(ResourceAttributes['k8s.node.name'], ''), ResourceAttributes['host.name']) AS node,
        LogAttributes['once.comm']                    AS program,
        LogAttributes['process.executable.path']      AS exe,
        LogAttributes['once.kind']                    AS kind,
        max(toUInt64OrZero(LogAttributes['once.wasted_ns'])) AS wasted_ns
    FROM otel.otel_logs
    WHERE ScopeName = 'github.com/oncetool/once'
      AND LogAttributes['once.kind'] != ''
      AND Timestamp >= now() - INTERVAL 1 DAY
    GROUP BY node, program, exe, kind,
             LogAttributes['process.pid'], LogAttributes['once.start_ns'], LogAttributes['once.subject']
)
SELECT
    program,
    any(exe)                                  AS an_executable,
    uniqExact(node)                           AS nodes,
    count()                                   AS findings,
    round(sum(wasted_ns) / 1e9, 3)            AS wasted_seconds,
    groupUniqArray(5)(kind)                   AS kinds
FROM findings
GROUP BY program
ORDER BY wasted_seconds DESC
LIMIT 20;
