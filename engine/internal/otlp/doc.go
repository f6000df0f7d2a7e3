// Package otlp is a small OTLP/HTTP JSON trace exporter (stdlib only) for
// stratum runs: the flow is the root span, each step a child span, each
// infer call a CLIENT child of its step with the current GenAI semantic
// convention attributes (gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens, …) plus
// stratum.* attributes, and every failed attempt a span event carrying its
// violations.
//
// Export is off the hot path: ended spans go to a bounded queue that a
// background goroutine batches and POSTs to {endpoint}/v1/traces; when the
// queue is full or a POST fails the spans are dropped and counted
// (Exporter.Dropped). Ids are hex strings and 64-bit integers decimal
// strings, as OTLP/JSON requires.
//
// Configuration follows the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME (and OTEL_SDK_DISABLED=true turns it off). A nil
// *Exporter, *Span or *Tracker is a valid no-op, so callers need no checks.
//
// GenAI attribute names follow open-telemetry/semantic-conventions-genai
// (Development status, as of 2026-11; gen_ai.system is deprecated in favour
// of gen_ai.provider.name).
package otlp
