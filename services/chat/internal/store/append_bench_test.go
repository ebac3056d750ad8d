package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/cpustat"
	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/store/storetest"
)

// BenchmarkAppendAgentMessage appends one agent message per transaction,
// round robin over 100 sessions, as the pump of a busy instance does
// (store.AppendMessages, committed without waiting for the disk), and
// reports, besides the time per append, the CPU time the PostgreSQL
// backend spent on it (server-µs/op) when the server runs on this machine.
// An assistant message with a tool_use block is what the session_files
// trigger reads; plain text is the common message. Each append has its
// key, as the room's do.
func BenchmarkAppendAgentMessage(b *testing.B) {
	const text = `{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":" chunk 7"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"0b4f7a1e-1111-2222-3333-444455556666","uuid":"1b4f7a1e-1111-2222-3333-444455556666","timestamp":"2026-11-26T05:00:00.000Z"}`
	toolUse := strings.Replace(text, `{"type":"text","text":" chunk 7"}`, `{"type":"tool_use","id":"toolu_01","name":"Edit","input":{"file_path":"/srv/a.go","old_string":"x","new_string":"y"}}`, 1)
	for _, c := range []struct{ name, payload string }{{"text", text}, {"tool_use", toolUse}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			_, url := storetest.New(b)
			db := storetest.Pool(b, url, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
			st := store.New(db, store.AppendPool(db))
			ids := make([]string, 100)
			for i := range ids {
				s, err := st.Create(ctx, store.NewSession{Cwd: "/srv", Provider: "agent-sdk"})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			var pid int
			if err := db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			cpu0, cpuErr := cpustat.Take(pid) // the server runs on this machine
			b.ResetTimer()
			for i := range b.N {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, errs, err := st.AppendMessages(actx, []store.Append{{SessionID: ids[i%len(ids)], Kind: store.KindAgent, Payload: []byte(c.payload), Key: store.NewAppendKey()}})
				cancel()
				if err == nil {
					err = errs[0]
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if cpu1, err := cpustat.Take(pid); cpuErr == nil && err == nil {
				b.ReportMetric(float64(cpu1.Since(cpu0).ProcTime[0].Microseconds())/float64(b.N), "server-µs/op")
			}
		})
	}
}
