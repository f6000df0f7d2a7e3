// Package jsonlimit is the one rule for JSON that comes from outside
// stratum: at most MaxBytes (16 MiB) and MaxDepth (256) levels of nesting.
// engine/mcp checks every MCP frame with Check before the SDK decodes it;
// engine/run reads a step result or flow inputs given to the CLI with Read,
// ReadFile and Decode. The same limits for both, so neither accepts what
// the other refuses. It imports nothing of stratum.
package jsonlimit
