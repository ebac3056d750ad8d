package room

import "sync"

// bgGroup counts the Manager's background goroutines (stores, publishes,
// turn events, forwarded commands) so that Close can wait for them. A
// WaitGroup's Add from zero must not race its Wait, and frames keep
// coming while Close waits (a turn that fails at shutdown stores a
// notice): once Wait has begun, Go runs its function on the caller's
// goroutine instead, so that nothing queued then is lost or left running
// past Close.
type bgGroup struct {
	mu      sync.RWMutex
	waiting bool
	wg      sync.WaitGroup
}

// Go runs f on a goroutine that Wait waits for, or, once Wait has begun,
// before it returns. The caller must hold no lock that f takes.
func (g *bgGroup) Go(f func()) {
	g.mu.RLock()
	if g.waiting {
		g.mu.RUnlock()
		f()
		return
	}
	g.wg.Add(1)
	g.mu.RUnlock()
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// Wait waits for the goroutines Go started; Go runs inline from then on.
func (g *bgGroup) Wait() {
	g.mu.Lock()
	g.waiting = true
	g.mu.Unlock()
	g.wg.Wait()
}
