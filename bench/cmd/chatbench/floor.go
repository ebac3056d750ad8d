package main

// The floor: the same sockets, frames, schedule and client as the chat
// run, served by the least a server could do: one process that writes
// each frame, encoded once, to each socket of its session with one
// write(2) straight from the session's goroutine. No log, no PostgreSQL,
// no Redis relay, no agent process, no queues. What the chat run costs
// beyond it is chat's; what the floor itself costs is this machine's
// loopback TCP and the benchmark client.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/bench/internal/proc"
)

// floorSession is one session of the floor server: its sockets and log.
type floorSession struct {
	id    string
	delay time.Duration

	mu    sync.Mutex
	conns []net.Conn
	line  int64
	busy  bool
}

// floorServe runs the floor server; spec is "delay,sessions". It logs
// {"msg":"listening","addr":…} on stderr once it accepts sockets:
// GET /chat?group=g upgrades a socket into session g, answers
// `connected`, and a user_message "SLOW n" on it runs a turn of n
// assistant messages, delay apart, as chat with the fake CLI does.
func floorServe(spec string) error {
	d, n, ok := strings.Cut(spec, ",")
	delay, err := time.ParseDuration(d)
	sessions, nerr := strconv.Atoi(n)
	if !ok || err != nil || nerr != nil || delay <= 0 || sessions <= 0 {
		return fmt.Errorf("-floor-serve %q: want delay,sessions", spec)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	line, _ := json.Marshal(map[string]string{"msg": "listening", "addr": ln.Addr().String()})
	fmt.Fprintln(os.Stderr, string(line))
	srv := &http.Server{Handler: floorHandler(delay, sessions), ReadHeaderTimeout: 30 * time.Second}
	return srv.Serve(ln)
}

// floorHandler serves the floor's /chat.
func floorHandler(delay time.Duration, sessions int) http.Handler {
	ss := make([]*floorSession, sessions)
	for i := range ss {
		ss[i] = &floorSession{id: fmt.Sprintf("floor-%04d", i), delay: delay}
	}
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc("/chat", func(w http.ResponseWriter, r *http.Request) {
		g, err := strconv.Atoi(r.URL.Query().Get("group"))
		if err != nil || g < 0 || g >= len(ss) {
			http.Error(w, "group: want 0 to "+strconv.Itoa(len(ss)-1), http.StatusBadRequest)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ss[g].serve(ws)
	})
	return mux
}

// serve joins ws to the session and runs its prompts until it closes.
func (s *floorSession) serve(ws *websocket.Conn) {
	defer ws.Close()
	nc := ws.NetConn()
	// Joined before connected goes out (under the lock a turn takes its
	// sockets with): a client that prompts once it reads connected is sure
	// to get the turn's frames, as from chat.
	s.mu.Lock()
	err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"connected","session_id":"`+s.id+`"}`))
	if err == nil {
		s.conns = append(s.conns, nc)
	}
	s.mu.Unlock()
	if err != nil {
		return
	}
	defer func() {
		s.mu.Lock()
		for i, c := range s.conns {
			if c == nc {
				s.conns = append(s.conns[:i], s.conns[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	}()
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var m struct{ Type, Content string }
		var chunks int
		if json.Unmarshal(msg, &m) != nil || m.Type != "user_message" {
			continue
		}
		if _, err := fmt.Sscanf(m.Content, "SLOW %d", &chunks); err != nil || chunks <= 0 {
			continue
		}
		go s.turn(nc, m.Content, chunks)
	}
}

// turn runs one turn as chat and the fake CLI do: the prompt's
// message_stored to every socket (and user_message_stored to the sender),
// the agent's system/init with its first message, the others delay apart,
// the last with the result; each frame logged with the next line.
func (s *floorSession) turn(sender net.Conn, prompt string, chunks int) {
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return
	}
	s.busy = true
	conns := append([]net.Conn(nil), s.conns...)
	line := s.line
	s.line += int64(chunks) + 3
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.busy = false
		s.mu.Unlock()
	}()
	next := func() int64 { line++; return line }
	stored, _ := json.Marshal(map[string]any{"type": "message_stored", "line": next(), "message": map[string]string{"role": "user", "content": prompt}})
	broadcast(conns, wsFrames(stored))
	ack := fmt.Appendf(nil, `{"isFavorite":false,"promptId":"%s:%d","type":"user_message_stored"}`, s.id, line)
	_, _ = sender.Write(wsFrames(ack))
	init := fmt.Appendf(nil, `{"type":"agent_message","data":{"type":"system","subtype":"init","session_id":"%s","model":"claude-sonnet-4-5","permissionMode":"default","tools":%s},"line":%d}`, s.id, initTools, next())
	var text strings.Builder
	for i := range chunks {
		if i > 0 {
			time.Sleep(s.delay)
		}
		chunk := " chunk " + strconv.Itoa(i+1)
		text.WriteString(chunk)
		msg := assistantFrame(s.id, next(), i, chunk, time.Now())
		switch {
		case i == 0 && chunks == 1:
			broadcast(conns, wsFrames(init, msg, resultFrame(s.id, next(), text.String())))
		case i == 0:
			broadcast(conns, wsFrames(init, msg))
		case i == chunks-1:
			broadcast(conns, wsFrames(msg, resultFrame(s.id, next(), text.String())))
		default:
			broadcast(conns, wsFrames(msg))
		}
	}
}

// assistantFrame is an agent_message frame as chat sends the fake CLI's
// assistant message, the same keys in the same order.
func assistantFrame(session string, line int64, i int, chunk string, at time.Time) []byte {
	return fmt.Appendf(nil, `{"type":"agent_message","data":{"type":"assistant","message":{"type":"message","content":[{"type":"text","text":%q}],"context_management":null,"id":"msg_%04d","model":"claude-sonnet-4-5","role":"assistant","stop_reason":null,"stop_sequence":null,"usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":42,"output_tokens":1}},"parent_tool_use_id":null,"request_id":"req_%04d","session_id":"%s","timestamp":"%s","uuid":"00000000-0000-4000-8000-%012d"},"line":%d}`,
		chunk, i+1, i+1, session, at.UTC().Format(fakeTimestamp), line, line)
}

func resultFrame(session string, line int64, text string) []byte {
	return fmt.Appendf(nil, `{"type":"agent_message","data":{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"num_turns":1,"result":%q,"session_id":"%s","total_cost_usd":0.000381,"usage":%s},"line":%d}`,
		text, session, resultUsage, line)
}

// initTools and resultUsage pad the floor's system/init and result to
// about the size of the fake CLI's (3.3 and 2.5 KiB), which the client
// reads on every socket at each turn's start and end.
var (
	initTools   = padList("tool", 3000)
	resultUsage = `{"input_tokens":42,"output_tokens":17,"server_tool_use":` + padList("use", 2200) + `}`
)

// padList is a JSON list of names "<word>_<n>" about size bytes long.
func padList(word string, size int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", word+"_"+strconv.Itoa(i))
	}
	b.WriteByte(']')
	return b.String()
}

// wsFrames encodes payloads as final, unmasked text frames, back to back.
func wsFrames(payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		switch n := len(p); {
		case n < 126:
			b = append(b, 0x81, byte(n))
		case n <= 0xFFFF:
			b = binary.BigEndian.AppendUint16(append(b, 0x81, 126), uint16(n))
		default:
			b = binary.BigEndian.AppendUint64(append(b, 0x81, 127), uint64(n))
		}
		b = append(b, p...)
	}
	return b
}

// broadcast writes b to every connection, one write each.
func broadcast(conns []net.Conn, b []byte) {
	for _, c := range conns {
		_, _ = c.Write(b)
	}
}

// runFloor starts the floor server (this program, -floor-serve), opens
// o.n sockets on o.sessions sessions, warms up as the chat run does, and
// measures the same load.
func runFloor(ctx context.Context, o options, delay time.Duration) (load, error) {
	exe, err := os.Executable()
	if err != nil {
		return load{}, err
	}
	p, err := proc.Start(ctx, proc.Config{
		Name: "floor server", Path: exe, Args: []string{"-floor-serve", fmt.Sprintf("%s,%d", delay, o.sessions)},
		Env: os.Environ(), StopTimeout: 10 * time.Second, Lines: func(string) {},
	})
	if err != nil {
		return load{}, err
	}
	defer func() { _ = p.Stop() }()
	addr, err := p.WaitListening(ctx, 30*time.Second)
	if err != nil {
		return load{}, err
	}
	// Socket i joins session i%S, so that socket s (< S) drives session
	// s, as in the chat run.
	socks, err := dialAll(ctx, o.n, nil, func(i int) string { return fmt.Sprintf("ws://%s/chat?group=%d", addr, i%o.sessions) })
	defer func() {
		for _, s := range socks {
			_ = s.conn.Close()
		}
	}()
	if err != nil {
		return load{}, err
	}
	rd, err := newReader(socks, readers)
	if err != nil {
		return load{}, err
	}
	defer rd.stop()
	if o.warmup {
		if err := warmUp(ctx, socks, o.sessions); err != nil {
			return load{}, err
		}
		settle()
	}
	return runLoad(ctx, o, socks, o.sessions, delay, []int{os.Getpid(), p.Pid()})
}
