package room

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Redis is not trusted with the relay: whoever can publish to it must not
// be able to run a command on a session's owner (a prompt, a permission
// answer, a stop, a mode change), nor show the users' sockets a frame as
// if from the agent (a fake permission_request), nor add a pending request
// to the perm hash. Every message on the cmd and frames channels, and
// every entry of the perm hash, is therefore sealed: it starts with the
// hex HMAC-SHA256, under a key derived from the internal secret
// (RelayKeyPurpose; the secret itself never reaches Redis), of where it is
// (channel, or hash key and field) and of the JSON body after it. Each
// message carries its sender's instance id, a sequence number and its
// time: a receiver drops a message older than relayMaxAge, and one whose
// (sender, number) it has seen (a sliding window per sender), so that a
// message recorded from Redis cannot be played again. A message that does
// not verify is dropped and logged once per channel.

// RelayKeyPurpose is what the relay's key is derived for from the
// internal secret.
const RelayKeyPurpose = "chat relay v1"

const (
	// relayMaxAge is how old (or how far ahead of this clock) a relayed
	// message may be: more than the publisher's retries last (a frame
	// is published again for publishRetryFor after a Redis failure).
	relayMaxAge = time.Minute
	// windowWords*64 is how many sequence numbers back from the highest
	// seen a sender's late message is still accepted (once).
	windowWords = 64
	// maxLoggedChannels bounds the channels remembered for log-once.
	maxLoggedChannels = 1024
	macHexLen         = 2 * sha256.Size
)

// relayAuth seals and opens the relay's messages.
type relayAuth struct {
	key   []byte
	macs  sync.Pool // *macState under key
	seq   atomic.Uint64
	log   *slog.Logger
	now   func() time.Time
	mu    sync.Mutex
	win   map[string]*replayWindow // kind + "\x00" + sender
	drops map[string]bool          // channels logged
}

// newRelayAuth derives the relay key from secret. Without a secret (a
// Manager in a unit test) the key is random: the instance verifies its own
// messages and nobody else's.
func newRelayAuth(secret internalauth.Secret, log *slog.Logger) *relayAuth {
	key := secret.Derive(RelayKeyPurpose)
	if key == nil {
		key = make([]byte, sha256.Size)
		_, _ = rand.Read(key)
	}
	a := &relayAuth{key: key, log: log, now: time.Now, win: map[string]*replayWindow{}, drops: map[string]bool{}}
	a.macs.New = func() any {
		return &macState{h: hmac.New(sha256.New, a.key), buf: make([]byte, 0, 128), sum: make([]byte, 0, sha256.Size)}
	}
	// Numbers keep increasing across restarts of an instance that keeps
	// its id (Config.Instance): they start from the clock.
	a.seq.Store(uint64(time.Now().UnixMicro()))
	return a
}

// next is the sequence number and time of a message about to be sealed.
func (a *relayAuth) next() (seq uint64, at int64) {
	return a.seq.Add(1), a.now().UnixMilli()
}

// macState is a pooled HMAC with its scratch space, so that a MAC costs
// no allocation.
type macState struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

// mac writes the hex MAC of (where..., body) into dst: each where is
// preceded by its length, so that no two lists of fields sign alike.
func (a *relayAuth) mac(dst []byte, body []byte, where ...string) {
	st := a.macs.Get().(*macState)
	st.h.Reset()
	st.buf = st.buf[:0]
	for _, w := range where {
		st.buf = binary.AppendUvarint(st.buf, uint64(len(w)))
		st.buf = append(st.buf, w...)
	}
	st.h.Write(st.buf)
	st.h.Write(body)
	st.sum = st.h.Sum(st.sum[:0])
	hex.Encode(dst, st.sum)
	a.macs.Put(st)
}

// seal returns body sealed for where (a channel; a hash key and field).
func (a *relayAuth) seal(body []byte, where ...string) []byte {
	out := make([]byte, macHexLen+len(body))
	a.mac(out[:macHexLen], body, where...)
	copy(out[macHexLen:], body)
	return out
}

// open returns the body of a sealed message when its MAC verifies for
// where; ok is false otherwise.
func (a *relayAuth) open(msg []byte, where ...string) (body []byte, ok bool) {
	if len(msg) < macHexLen {
		return nil, false
	}
	var want [macHexLen]byte
	a.mac(want[:], msg[macHexLen:], where...)
	if !hmac.Equal(want[:], msg[:macHexLen]) {
		return nil, false
	}
	return msg[macHexLen:], true
}

// fresh reports whether a verified message of kind from sender, numbered
// seq and sent at (unix ms), is neither too old nor seen before; it
// records it.
func (a *relayAuth) fresh(kind, sender string, seq uint64, at int64) bool {
	now := a.now()
	if d := now.Sub(time.UnixMilli(at)); d > relayMaxAge || d < -relayMaxAge || seq == 0 {
		return false
	}
	k := kind + "\x00" + sender
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.win[k]
	if w == nil {
		// Forget the senders silent for longer than a message lives:
		// anything they sent before is too old by now.
		if len(a.win) >= 64 {
			for k2, w2 := range a.win {
				if now.Sub(w2.last) > 2*relayMaxAge {
					delete(a.win, k2)
				}
			}
		}
		w = &replayWindow{}
		a.win[k] = w
	}
	w.last = now
	return w.accept(seq)
}

// dropped logs, once per channel (or hash key), a message that did not
// verify or was stale.
func (a *relayAuth) dropped(where, why string) {
	a.mu.Lock()
	seen := a.drops[where]
	full := len(a.drops) >= maxLoggedChannels
	if !seen && !full {
		a.drops[where] = true
	}
	a.mu.Unlock()
	if !seen && !full {
		a.log.Warn("relayed message ignored", "key", where, "reason", why)
	}
}

// replayWindow remembers which of a sender's recent sequence numbers were
// seen: a ring of bits covering windowWords*64 numbers below the highest.
type replayWindow struct {
	top  uint64
	ring [windowWords]uint64
	last time.Time
}

func (w *replayWindow) accept(seq uint64) bool {
	block, top := seq/64, w.top/64
	if w.top != 0 && block+windowWords <= top {
		return false // older than the window
	}
	if seq > w.top {
		if w.top == 0 {
			w.ring = [windowWords]uint64{}
		} else {
			for i, n := uint64(1), min(block-top, windowWords); i <= n; i++ {
				w.ring[(top+i)%windowWords] = 0
			}
		}
		w.top = seq
	}
	bit := uint64(1) << (seq % 64)
	if w.ring[block%windowWords]&bit != 0 {
		return false
	}
	w.ring[block%windowWords] |= bit
	return true
}

// SealedPermEntry is the value an owner keeps in the perm hash
// <prefix>chat:perm:<session>, field req.RequestID, for a pending request
// asked at seq (unix ns): what a test arranging a dead owner's leftovers
// writes.
func SealedPermEntry(secret internalauth.Secret, prefix, session string, seq int64, req agent.PermissionRequest) string {
	a := newRelayAuth(secret, slog.New(slog.DiscardHandler))
	b, _ := json.Marshal(permEntry{Seq: seq, Req: req})
	return string(a.seal(b, prefix+"chat:perm:"+session, req.RequestID))
}
