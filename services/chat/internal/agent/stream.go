package agent

import (
	"context"
	"io"
	"sync"
)

// Stream is an unbounded, closable queue of events from one provider to its
// consumer. Push never blocks, so the goroutine reading the agent's stdout
// never waits for the consumer: control responses keep being routed even
// while the consumer is busy (for instance inside Interrupt). The price is
// memory: a consumer must keep reading.
//
// Stream is meant for a single consumer; Next is safe to call from several
// goroutines, but each event goes to one of them.
type Stream struct {
	mu     sync.Mutex
	q      []Event
	closed bool
	wake   chan struct{} // capacity 1: "the queue may have changed"
}

// NewStream returns an empty, open stream.
func NewStream() *Stream {
	return &Stream{wake: make(chan struct{}, 1)}
}

// Push appends e. It reports false, dropping e, if the stream is closed.
func (s *Stream) Push(e Event) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.q = append(s.q, e)
	s.mu.Unlock()
	s.signal()
	return true
}

// Close ends the stream: Next returns the queued events, then io.EOF.
// Closing twice is harmless.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

// Next returns the oldest queued event, waiting for one if the queue is
// empty. It returns io.EOF once the stream is closed and drained, or the
// context's error.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			e := s.q[0]
			s.q[0] = nil
			s.q = s.q[1:]
			more := len(s.q) > 0
			if !more {
				s.q = nil // let the backing array go
			}
			s.mu.Unlock()
			if more {
				s.signal() // another waiting consumer may take the rest
			}
			return e, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.signal() // wake any other waiter to see EOF too
			return nil, io.EOF
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Len is the number of queued events.
func (s *Stream) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q)
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
