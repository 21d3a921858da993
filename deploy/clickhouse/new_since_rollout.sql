-- Findings new since a rollout: the (workload, program, kind, subject)
-- seen after the rollout and never in the week before it. Set the
-- rollout's time and its workload (k8s.deployment.name, which the node
-- agent's k8sattributes adds), e.g. in clickhouse-client:
--   SET param_rollout = '2026-12-01 14:00:00', param_deployment = 'checkout';
WITH
    parseDateTime64BestEffort({rollout:String}, 9) AS rollout
SELECT
    LogAttributes['once.kind']                      AS kind,
    LogAttributes['once.comm']                      AS program,
    LogAttributes['once.subject']                   AS subject,
    min(Timestamp)                                  AS first_seen,
    uniqExact(ResourceAttributes['k8s.node.name'], ResourceAttributes['host.name']) AS nodes,
    uniqExact(ResourceAttributes['k8s.pod.name'])   AS pods,
    round(max(toUInt64OrZero(LogAttributes['once.wasted_ns'])) / 1e9, 6) AS worst_wasted_seconds,
    any(LogAttributes['once.suggestion'])           AS suggestion
FROM otel.otel_logs
WHERE ScopeName = 'github.com/oncetool/once'
  AND LogAttributes['once.kind'] != ''
  AND ResourceAttributes['k8s.deployment.name'] = {deployment:String}
  AND Timestamp >= rollout - INTERVAL 7 DAY
GROUP BY kind, program, subject
HAVING first_seen >= rollout
ORDER BY worst_wasted_seconds DESC
LIMIT 50;
