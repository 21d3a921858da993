// Package otlp is the --otlp sink: every finding as an OpenTelemetry log
// record and every counter as an OpenTelemetry metric, sent to an OTLP
// endpoint (an OpenTelemetry Collector) over HTTP (http/protobuf) or gRPC
// with the official OpenTelemetry Go SDK and exporters.
//
// Records: one per finding the session hands over (watch: once, when it
// is made, as the JSON lines; run: each finding of the result, at its
// end). Its body is the finding in one line, its attributes say
// what it is, who made it and what it suggests (attrs.go), its severity
// grows with the time wasted, its time is that of the finding's last call.
// The resource says which node: service.name "once" (OTEL_SERVICE_NAME
// wins), host.name, host.id, os.type, os.description, and whatever
// OTEL_RESOURCE_ATTRIBUTES adds (k8s.node.name in the DaemonSet).
//
// Metrics: every trace.Shown counter as once.<its JSON key>, and the
// findings and their waste per kind (once.findings, once.wasted), the
// kinds of trace.Kinds only, so that every series is bounded whatever the
// traced processes do. Cumulative: an export that failed is made good by
// the next one.
//
// Bounded: Finding never blocks the drain loop. The records go to a queue
// bounded in bytes (QueueBytes, 8 MiB by default, the batch being sent
// included); one goroutine sends them in batches, retrying a failed batch
// with exponential backoff (the exporters' own retries first, for the
// answers that ask for one, then the queue's, for a collector that can't
// be reached) until RetryFor has passed. A record the queue can't take, a
// batch given up, and what is still queued when Close's FlushTimeout
// passes are counted in otlp_dropped (Counting), as is each metric export
// that failed. A collector down, slow or refusing costs records, never
// more memory.
package otlp
