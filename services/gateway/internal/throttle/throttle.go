// Package throttle slows down password guessing without locking the real
// user out. Per client (by address):
//
//   - every attempt is counted as a failure when it starts, before the
//     slow password check, and the count is cleared by a success;
//   - one attempt at a time: a second one while the first is being checked
//     is refused, not queued;
//   - a few failures are free, then each further one imposes a wait before
//     the next attempt that doubles from Base up to Max;
//   - attempts refused while waiting are not checked and not counted, so
//     hammering does not lengthen the wait.
//
// So the right password is refused for at most Max after the last checked
// attempt of its client, and never because of another client.
package throttle

import (
	"sync"
	"time"
)

// Limiter tracks attempts per client key.
type Limiter struct {
	// Free is how many failures pass before waits start.
	Free int
	// Base is the first wait; each later failure doubles it up to Max.
	Base, Max time.Duration
	// Forget drops a client's record after this long without attempts.
	Forget time.Duration
	// MaxClients bounds memory; the stalest records are dropped first.
	MaxClients int
	Now        func() time.Time

	mu      sync.Mutex
	clients map[string]*record
}

type record struct {
	failures int
	inFlight bool
	until    time.Time
	last     time.Time
}

// Defaults of the login throttle (documented in docs/api.md).
const (
	DefaultFree = 5
	DefaultBase = time.Second
	DefaultMax  = 30 * time.Second
)

// New returns a limiter with the login defaults: 5 free failures, then a
// wait of 1 s doubling to 30 s.
func New() *Limiter {
	return &Limiter{Free: DefaultFree, Base: DefaultBase, Max: DefaultMax, Forget: time.Hour, MaxClients: 10000, Now: time.Now}
}

// Refusal says why Begin refused an attempt.
type Refusal int

// Reasons for a refusal.
const (
	Allowed  Refusal = iota
	Waiting          // the client must wait after its failures
	InFlight         // the client's previous attempt is still being checked
)

// Begin starts an attempt for key. When it is allowed, the attempt already
// counts as a failure (and sets the wait that follows it); the caller must
// call Finish when the check is done. When refused, wait is how long
// before the next attempt may start.
func (l *Limiter) Begin(key string) (Refusal, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients == nil {
		l.clients = map[string]*record{}
	}
	now := l.Now()
	r := l.clients[key]
	if r != nil && !r.inFlight && now.Sub(r.last) > l.Forget {
		delete(l.clients, key)
		r = nil
	}
	if r == nil {
		if len(l.clients) >= l.MaxClients {
			l.evict(now)
		}
		r = &record{}
		l.clients[key] = r
	}
	if r.inFlight {
		return InFlight, time.Second
	}
	if wait := r.until.Sub(now); wait > 0 {
		return Waiting, wait
	}
	r.inFlight = true
	r.failures++
	r.last = now
	r.until = now.Add(l.delay(r.failures))
	return Allowed, 0
}

// Finish ends the attempt Begin allowed: a success clears key's record, a
// failure keeps the count Begin made.
func (l *Limiter) Finish(key string, success bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if success {
		delete(l.clients, key)
		return
	}
	if r := l.clients[key]; r != nil {
		r.inFlight = false
	}
}

// delay is the wait imposed after the n-th failure.
func (l *Limiter) delay(n int) time.Duration {
	over := n - l.Free
	if over <= 0 {
		return 0
	}
	d := l.Base
	for i := 1; i < over && d < l.Max; i++ {
		d *= 2
	}
	return min(d, l.Max)
}

func (l *Limiter) evict(now time.Time) {
	var oldestKey string
	var oldest time.Time
	for k, r := range l.clients {
		if r.inFlight {
			continue
		}
		if now.Sub(r.last) > l.Forget {
			delete(l.clients, k)
			continue
		}
		if oldestKey == "" || r.last.Before(oldest) {
			oldestKey, oldest = k, r.last
		}
	}
	if len(l.clients) >= l.MaxClients && oldestKey != "" {
		delete(l.clients, oldestKey)
	}
}
