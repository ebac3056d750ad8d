// Package throttle slows down password guessing: each client (by address)
// gets a few free failures, then must wait a delay that doubles with every
// further failure, up to a cap. A success clears the client's record.
package throttle

import (
	"sync"
	"time"
)

// Limiter tracks failures per client key.
type Limiter struct {
	// Free is how many failures pass before delays start.
	Free int
	// Base is the first delay; each later failure doubles it up to Max.
	Base, Max time.Duration
	// Forget drops a client's record after this long without failures.
	Forget time.Duration
	// MaxClients bounds memory; the stalest records are dropped first.
	MaxClients int
	Now        func() time.Time

	mu      sync.Mutex
	clients map[string]*record
}

type record struct {
	failures int
	until    time.Time
	last     time.Time
}

// New returns a limiter with the login defaults: 5 free failures, then 1 s
// doubling to 15 min.
func New() *Limiter {
	return &Limiter{Free: 5, Base: time.Second, Max: 15 * time.Minute, Forget: time.Hour, MaxClients: 10000, Now: time.Now}
}

// Allow reports whether key may try now, and if not, how long to wait.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.clients[key]
	if r == nil {
		return true, 0
	}
	now := l.Now()
	if now.Sub(r.last) > l.Forget {
		delete(l.clients, key)
		return true, 0
	}
	if wait := r.until.Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// Fail records a failure and returns the delay now imposed (0 while free).
func (l *Limiter) Fail(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients == nil {
		l.clients = map[string]*record{}
	}
	now := l.Now()
	r := l.clients[key]
	if r == nil {
		if len(l.clients) >= l.MaxClients {
			l.evict(now)
		}
		r = &record{}
		l.clients[key] = r
	}
	r.failures++
	r.last = now
	over := r.failures - l.Free
	if over <= 0 {
		return 0
	}
	d := l.Base
	for i := 1; i < over && d < l.Max; i++ {
		d *= 2
	}
	d = min(d, l.Max)
	r.until = now.Add(d)
	return d
}

// Succeed clears key's record.
func (l *Limiter) Succeed(key string) {
	l.mu.Lock()
	delete(l.clients, key)
	l.mu.Unlock()
}

func (l *Limiter) evict(now time.Time) {
	var oldestKey string
	var oldest time.Time
	for k, r := range l.clients {
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
