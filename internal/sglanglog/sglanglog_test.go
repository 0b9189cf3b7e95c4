package sglanglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseSGLangLine(t *testing.T) {
	cases := []struct {
		name, in string
		stamp    string // "" for none
		ranks    string
		text     string
	}{
		{"TP only", "[2026-06-18 20:38:03 TP0] Decode batch, #running-req: 1",
			"2026-06-18 20:38:03", "TP0", "Decode batch, #running-req: 1"},
		{"DP TP", "[2026-06-18 20:38:03 DP0 TP0] Decode batch, #running-req: 1",
			"2026-06-18 20:38:03", "DP0 TP0", "Decode batch, #running-req: 1"},
		{"DP TP EP with milliseconds", "[2026-09-24 01:50:43.001 DP0 TP0 EP0] Prefill batch, #new-seq: 1",
			"2026-09-24 01:50:43.001", "DP0 TP0 EP0", "Prefill batch, #new-seq: 1"},
		{"comma milliseconds", "[2026-09-24 01:50:43,250 TP3] x",
			"2026-09-24 01:50:43.25", "TP3", "x"},
		{"newer rank parts", "[2026-09-24 01:50:43 DP1 PP0 ATTN_CP0 MOE_DP1 TP1 EP1] y",
			"2026-09-24 01:50:43", "DP1 PP0 ATTN_CP0 MOE_DP1 TP1 EP1", "y"},
		{"no rank (HTTP process)", "[2026-06-18 20:38:41] The server is fired up and ready to roll!",
			"2026-06-18 20:38:41", "", "The server is fired up and ready to roll!"},
		{"uvicorn access", `[2026-02-19 16:32:50] INFO:     10.99.91.39:56576 - "GET /health HTTP/1.1" 200 OK`,
			"2026-02-19 16:32:50", "", `INFO:     10.99.91.39:56576 - "GET /health HTTP/1.1" 200 OK`},
		{"NIXL's own logger", "2026-06-18 19:41:07 NIXL INFO    _api.py:361 Backend UCX was instantiated",
			"2026-06-18 19:41:07", "", "2026-06-18 19:41:07 NIXL INFO    _api.py:361 Backend UCX was instantiated"},
		{"glog line has no year", "E0219 16:32:42.940815 535035 rdma_transport.cpp:529] fail",
			"", "", "E0219 16:32:42.940815 535035 rdma_transport.cpp:529] fail"},
		{"lower-case rank is not a prefix", "[2026-06-18 20:38:03 tp0] x", "", "", "[2026-06-18 20:38:03 tp0] x"},
		{"not a date", "[INFO] x", "", "", "[INFO] x"},
		{"impossible date", "[2026-13-18 20:38:03] x", "", "", "[2026-13-18 20:38:03] x"},
		{"dot without digits", "[2026-06-18 20:38:03.] x", "", "", "[2026-06-18 20:38:03.] x"},
		{"empty text", "[2026-06-18 20:38:03]", "2026-06-18 20:38:03", "", ""},
		{"traceback line", "  File \"/opt/sglang/scheduler.py\", line 12, in run",
			"", "", "  File \"/opt/sglang/scheduler.py\", line 12, in run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Parse(c.in)
			if c.stamp == "" {
				require.True(t, got.Stamp.IsZero())
			} else {
				require.Equal(t, utc(c.stamp), got.Stamp)
			}
			require.Equal(t, c.ranks, got.Ranks)
			require.Equal(t, c.text, got.Text)
		})
	}
}

func TestParseBatchLine(t *testing.T) {
	cases := []struct {
		name, in string
		kind     string
		iter     int
		fields   map[string]float64
	}{
		{"mid-2025 decode with period and trailing comma",
			"Decode batch. #running-req: 16, #token: 69399, token usage: 0.03, gen throughput (token/s): 3053.86, #queue-req: 0, ",
			"Decode", -1, map[string]float64{"running-req": 16, "token": 69399, "token usage": 0.03, "gen throughput (token/s)": 3053.86, "queue-req": 0}},
		{"late-2025 PD decode with trailing comma",
			"Decode batch, #running-req: 7, #token: 7040, token usage: 0.00, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 6.73, #queue-req: 0, ",
			"Decode", -1, map[string]float64{"running-req": 7, "token": 7040, "token usage": 0, "pre-allocated usage": 0, "prealloc-req": 0, "transfer-req": 0, "retracted-req": 0, "cuda graph": 1, "gen throughput (token/s)": 6.73, "queue-req": 0}},
		{"May-2026 decode with iteration",
			"Decode batch [4120], #running-req: 1, #token: 64, token usage: 0.20, pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 58.87, #queue-req: 0",
			"Decode", 4120, map[string]float64{"running-req": 1, "token": 64, "token usage": 0.2, "pre-allocated usage": 0, "prealloc-req": 0, "transfer-req": 0, "retracted-req": 0, "cuda graph": 1, "gen throughput (token/s)": 58.87, "queue-req": 0}},
		{"iteration without a space",
			"Decode batch[7], #running-req: 2",
			"Decode", 7, map[string]float64{"running-req": 2}},
		{"speculative decoding",
			"Decode batch, #running-req: 3, #token: 300, token usage: 0.01, accept len: 2.71, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0",
			"Decode", -1, map[string]float64{"running-req": 3, "token": 300, "token usage": 0.01, "accept len": 2.71, "accept rate": 0.68, "cuda graph": 1, "gen throughput (token/s)": 120, "queue-req": 0}},
		{"late-2025 prefill",
			"Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #prealloc-req: 1, #inflight-req: 0, input throughput (token/s): 1.73, ",
			"Prefill", -1, map[string]float64{"new-seq": 1, "new-token": 1, "cached-token": 0, "token usage": 0, "running-req": 0, "queue-req": 0, "prealloc-req": 1, "bootstrap-req": 1, "inflight-req": 0, "input throughput (token/s)": 1.73}},
		{"newest prefill with bootstrap-req, optimistic-req and occupancy",
			"Prefill batch [88], #new-seq: 2, #new-token: 512, #cached-token: 64, full token usage: 0.10, swa token usage: 0.05, #running-req: 0, #queue-req: 1, #pending-token: 0, #bootstrap-req: 0, #inflight-req: 1, #optimistic-req: 0, cpu graph: False, input throughput (token/s): 812.50, fwd occupancy: 93.5%",
			"Prefill", 88, map[string]float64{"new-seq": 2, "new-token": 512, "cached-token": 64, "full token usage": 0.1, "swa token usage": 0.05, "running-req": 0, "queue-req": 1, "pending-token": 0, "bootstrap-req": 0, "inflight-req": 1, "optimistic-req": 0, "cpu graph": 0, "input throughput (token/s)": 812.5, "fwd occupancy": 93.5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, ok := ParseBatch(c.in)
			require.True(t, ok)
			require.Equal(t, c.kind, b.Kind)
			require.Equal(t, c.iter, b.Iter)
			require.Equal(t, c.fields, b.Fields)
		})
	}
	for _, not := range []string{"Decode transfer failed for request rank=0", "KV cache pool is full. Retract requests.", "Decode batches"} {
		_, ok := ParseBatch(not)
		require.False(t, ok, not)
	}
}

func TestLineIDs(t *testing.T) {
	cases := []struct{ in, room, rid string }{
		{"Decode transfer failed for request rank=3 decode_req.req.rid='63b1ab' decode_req.req.bootstrap_room=6593551520068383758 with exception KVTransferError(bootstrap_room=6593551520068383758): Aborted by AbortReq.",
			"6593551520068383758", "63b1ab"},
		{"Prefill transfer failed for request rank=0 req.rid='e030' req.bootstrap_room=687467831379323517 with exception KVTransferError(bootstrap_room=687467831379323517): Failed to send kv chunk",
			"687467831379323517", "e030"},
		{"Decode transfer failed for request rank=1 rid=rb-0a1b2c bootstrap_room=42 with exception NIXL KVReceiver Exception", "42", "rb-0a1b2c"},
		{`ReqTimeStats(rid="abc-1", bootstrap_room=9, type=decode): bootstrap_duration=1ms`, "9", "abc-1"},
		{"Decode batch, #running-req: 1", "", ""},
	}
	for _, c := range cases {
		room, rid := IDs(c.in)
		require.Equal(t, c.room, room, c.in)
		require.Equal(t, c.rid, rid, c.in)
	}
}

func TestResolveTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	cases := []struct {
		name           string
		stamp, journal string
		loc            *time.Location
		want           string
	}{
		{"UTC host: the stamp's milliseconds are kept", "2026-06-18 20:38:03.250", "2026-06-18 20:38:03.260", time.UTC, "2026-06-18 20:38:03.25"},
		{"host in CEST: the offset comes from journald", "2026-06-18 22:38:03.250", "2026-06-18 20:38:03.400", time.UTC, "2026-06-18 20:38:03.25"},
		{"host in India (+05:30)", "2026-06-19 02:08:03", "2026-06-18 20:38:04", time.UTC, "2026-06-18 20:38:03"},
		{"no journal: the stamp is read in the configured zone", "2026-06-18 22:38:03", "", berlin, "2026-06-18 20:38:03"},
		{"no stamp: journald's time", "", "2026-06-18 20:38:03.5", time.UTC, "2026-06-18 20:38:03.5"},
		{"stamp unrelated to journald: journald wins", "2026-06-18 20:45:00", "2026-06-18 20:38:03", time.UTC, "2026-06-18 20:38:03"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stamp, journal time.Time
			if c.stamp != "" {
				stamp = utc(c.stamp)
			}
			if c.journal != "" {
				journal = utc(c.journal)
			}
			require.Equal(t, utc(c.want), ResolveTime(stamp, journal, c.loc))
		})
	}
}
