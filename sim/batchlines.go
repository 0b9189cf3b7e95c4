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
// engine. The decode form is SGLang's f"{decode_req.req.rid=}" rendering; the prefill
// form uses req.rid. The rid is printed with Python's repr quoting.
func FormatTransferFailed(mode string, tpRank int, rid string, room uint64, reason string) string {
	if mode == "prefill" {
		return fmt.Sprintf("Prefill transfer failed for request rank=%d req.rid=%s req.bootstrap_room=%d "+
			"with exception KVTransferError(bootstrap_room=%d): %s", tpRank, pyStr(rid), room, room, reason)
	}
	return fmt.Sprintf("Decode transfer failed for request rank=%d decode_req.req.rid=%s decode_req.req.bootstrap_room=%d "+
		"with exception KVTransferError(bootstrap_room=%d): %s", tpRank, pyStr(rid), room, room, reason)
}

// FormatBootstrapFailed renders the prefill bootstrap failure line, printed when a
// request is aborted or times out before decode sent its KV indices.
func FormatBootstrapFailed(tpRank int, rid string, room uint64, reason string) string {
	return fmt.Sprintf("Prefill bootstrap failed for request rank=%d req.rid=%s req.bootstrap_room=%d "+
		"with exception KVTransferError(bootstrap_room=%d): %s", tpRank, pyStr(rid), room, room, reason)
}

// Failure reasons SGLang records on a KV transfer (reference §2.1).
const (
	ReasonAborted      = "Aborted by AbortReq."
	ReasonPrefillDead  = "Failed to get kvcache from prefill instance, it might be dead"
	ReasonDecodeDead   = "Decode instance could be dead, remote mooncake session %s is not alive"
	ReasonNixlReceiver = "NIXL KVReceiver Exception"
	ReasonNixlSender   = "NIXL KVSender Exception"
)
