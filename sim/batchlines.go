package sim

import (
	"fmt"
	"strings"
)

// PrefillStats are the numbers one "Prefill batch" line reports.
type PrefillStats struct {
	Iter            int
	NewSeq          int
	NewToken        int
	CachedToken     int
	TokenUsage      float64
	Running         int
	Queue           int
	PendingToken    int
	Bootstrap       int // #prealloc-req (older) or #bootstrap-req (newest)
	Inflight        int
	InputThroughput float64
}

// DecodeStats are the numbers one "Decode batch" line reports.
type DecodeStats struct {
	Iter          int
	Running       int
	Tokens        int
	TokenUsage    float64
	PreallocUsage float64
	Prealloc      int
	Transfer      int
	Retracted     int
	GenThroughput float64
	Queue         int
}

// iterMark renders the optional " [N]" marker that SGLANG_LOG_FORWARD_ITERS adds.
func iterMark(showIters bool, n int) string {
	if !showIters {
		return ""
	}
	return fmt.Sprintf(" [%d]", n)
}

// FormatPrefillBatch renders a "Prefill batch" message (without the prefix) in the
// wording of the given era.
func FormatPrefillBatch(era LogEra, showIters bool, s PrefillStats) string {
	var b strings.Builder
	switch era {
	case EraMid2025:
		fmt.Fprintf(&b, "Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "+
			"#running-req: %d, #unbootstrapped-req: %d, #queue-req: %d, #transferring-req: %d, ",
			s.NewSeq, s.NewToken, s.CachedToken, s.TokenUsage, s.Running, s.Bootstrap, s.Queue, s.Inflight)
	case EraLate2025:
		fmt.Fprintf(&b, "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "+
			"#running-req: %d, #queue-req: %d, #prealloc-req: %d, #inflight-req: %d, input throughput (token/s): %.2f, ",
			s.NewSeq, s.NewToken, s.CachedToken, s.TokenUsage, s.Running, s.Queue, s.Bootstrap, s.Inflight, s.InputThroughput)
	case EraLate2026:
		fmt.Fprintf(&b, "Prefill batch%s, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "+
			"#running-req: %d, #queue-req: %d, #pending-token: %d, #bootstrap-req: %d, #inflight-req: %d, "+
			"#optimistic-req: 0, cuda graph: False, input throughput (token/s): %.2f",
			iterMark(showIters, s.Iter), s.NewSeq, s.NewToken, s.CachedToken, s.TokenUsage, s.Running, s.Queue,
			s.PendingToken, s.Bootstrap, s.Inflight, s.InputThroughput)
	default:
		fmt.Fprintf(&b, "Prefill batch%s, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "+
			"#running-req: %d, #queue-req: %d, #pending-token: %d, #prealloc-req: %d, #inflight-req: %d, "+
			"cuda graph: False, input throughput (token/s): %.2f",
			iterMark(showIters, s.Iter), s.NewSeq, s.NewToken, s.CachedToken, s.TokenUsage, s.Running, s.Queue,
			s.PendingToken, s.Bootstrap, s.Inflight, s.InputThroughput)
	}
	return b.String()
}

// FormatDecodeBatch renders a "Decode batch" message (without the prefix) in the
// wording of the given era. Every era after mid 2025 carries the PD-only fields.
func FormatDecodeBatch(era LogEra, showIters bool, s DecodeStats) string {
	switch era {
	case EraMid2025:
		return fmt.Sprintf("Decode batch. #running-req: %d, #token: %d, token usage: %.2f, "+
			"gen throughput (token/s): %.2f, #queue-req: %d, ",
			s.Running, s.Tokens, s.TokenUsage, s.GenThroughput, s.Queue)
	case EraLate2025:
		return fmt.Sprintf("Decode batch, #running-req: %d, #token: %d, token usage: %.2f, pre-allocated usage: %.2f, "+
			"#prealloc-req: %d, #transfer-req: %d, #retracted-req: %d, cuda graph: True, "+
			"gen throughput (token/s): %.2f, #queue-req: %d, ",
			s.Running, s.Tokens, s.TokenUsage, s.PreallocUsage, s.Prealloc, s.Transfer, s.Retracted, s.GenThroughput, s.Queue)
	default:
		return fmt.Sprintf("Decode batch%s, #running-req: %d, #token: %d, token usage: %.2f, pre-allocated usage: %.2f, "+
			"#prealloc-req: %d, #transfer-req: %d, #retracted-req: %d, cuda graph: True, "+
			"gen throughput (token/s): %.2f, #queue-req: %d",
			iterMark(showIters, s.Iter), s.Running, s.Tokens, s.TokenUsage, s.PreallocUsage, s.Prealloc, s.Transfer,
			s.Retracted, s.GenThroughput, s.Queue)
	}
}

// FormatTransferFailed renders the per-request failure line of a decode or prefill
// engine on the mooncake backend, whose exception names the recorded reason. The
// decode form is SGLang's f"{decode_req.req.rid=}" rendering; the prefill form uses
// req.rid. The rid is printed with Python's repr quoting.
func FormatTransferFailed(mode string, tpRank int, rid string, room uint64, reason string) string {
	return formatFailed(mode+" transfer", tpRank, rid, room, kvTransferError(room, reason))
}

// FormatBootstrapFailed renders the prefill bootstrap failure line (mooncake),
// printed when a request is aborted or times out before decode sent its KV indices.
func FormatBootstrapFailed(tpRank int, rid string, room uint64, reason string) string {
	return formatFailed("prefill bootstrap", tpRank, rid, room, kvTransferError(room, reason))
}

// formatFailed renders "<Kind> failed for request rank=… rid=… room=… with exception
// EXC" for kind "decode transfer", "prefill transfer" or "prefill bootstrap".
func formatFailed(kind string, tpRank int, rid string, room uint64, exception string) string {
	head := strings.ToUpper(kind[:1]) + kind[1:]
	if strings.HasPrefix(kind, "decode") {
		return fmt.Sprintf("%s failed for request rank=%d decode_req.req.rid=%s decode_req.req.bootstrap_room=%d with exception %s",
			head, tpRank, pyStr(rid), room, exception)
	}
	return fmt.Sprintf("%s failed for request rank=%d req.rid=%s req.bootstrap_room=%d with exception %s",
		head, tpRank, pyStr(rid), room, exception)
}

func kvTransferError(room uint64, reason string) string {
	return fmt.Sprintf("KVTransferError(bootstrap_room=%d): %s", room, reason)
}

// failureException is what an engine's failure line prints after "with exception".
// Mooncake (and the common receiver) raise KVTransferError with the recorded reason,
// e.g. "Aborted by AbortReq.". NIXL's receiver and sender raise a bare
// RuntimeError("NIXL KVReceiver Exception") / ("NIXL KVSender Exception") whatever
// was recorded (nixl/conn.py failure_exception, every stored version, 2025 to
// 2026), so a NIXL abort line carries no "Aborted" at all.
func failureException(backend, mode string, room uint64, reason string) string {
	if backend == "nixl" {
		if mode == "decode" {
			return ReasonNixlReceiver
		}
		return ReasonNixlSender
	}
	return kvTransferError(room, reason)
}

// transferFailedLine is this engine's "Decode/Prefill transfer failed" line.
func (e *Engine) transferFailedLine(tpRank int, rid string, room uint64, reason string) string {
	return formatFailed(e.cfg.Mode+" transfer", tpRank, rid, room, failureException(e.cfg.TransferBackend, e.cfg.Mode, room, reason))
}

// bootstrapFailedLine is this (prefill) engine's "Prefill bootstrap failed" line.
func (e *Engine) bootstrapFailedLine(tpRank int, rid string, room uint64, reason string) string {
	return formatFailed("prefill bootstrap", tpRank, rid, room, failureException(e.cfg.TransferBackend, "prefill", room, reason))
}

// Failure reasons SGLang records on a KV transfer (reference §2.1).
const (
	ReasonAborted      = "Aborted by AbortReq."
	ReasonPrefillDead  = "Failed to get kvcache from prefill instance, it might be dead"
	ReasonDecodeDead   = "Decode instance could be dead, remote mooncake session %s is not alive"
	ReasonNixlReceiver = "NIXL KVReceiver Exception"
	ReasonNixlSender   = "NIXL KVSender Exception"
)
