package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
	"golang.org/x/sys/unix"
)

// The benchmark's client reads its thousands of sockets with a few
// goroutines, each waiting on an epoll set of its share of them and
// reading each socket that has data straight from its descriptor, rather
// than with a goroutine and a WebSocket library reader per socket. The
// client shares the machine with the services, and at a turn's start it
// has three frames per socket to read within a few hundred milliseconds:
// read one goroutine wake-up at a time, it fell behind, and its own lag
// showed up as the services' latency. A frame's receipt time is taken
// when the read that completed it returns.

// reader reads the sockets handed to it until stop.
type reader struct {
	sets []*epollSet
	wg   sync.WaitGroup
}

// epollSet is one goroutine's share of the sockets.
type epollSet struct {
	epfd, wake int
	socks      map[int]*sock // by descriptor
}

// newReader starts n goroutines reading socks (each socket's descriptor
// taken from its connection: nothing else reads the connection after
// this; writes still go through the WebSocket library).
func newReader(socks []*sock, n int) (*reader, error) {
	r := &reader{}
	for range max(n, 1) {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			r.stop()
			return nil, fmt.Errorf("epoll_create1: %w", err)
		}
		wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			_ = unix.Close(epfd)
			r.stop()
			return nil, fmt.Errorf("eventfd: %w", err)
		}
		set := &epollSet{epfd: epfd, wake: wake, socks: map[int]*sock{}}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}); err != nil { //nolint:gosec // G115: descriptors fit an int32
			_ = unix.Close(epfd)
			_ = unix.Close(wake)
			r.stop()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
		r.sets = append(r.sets, set)
	}
	for i, s := range socks {
		fd, err := descriptor(s.conn)
		if err != nil {
			r.stop()
			return nil, err
		}
		s.fd = fd
		set := r.sets[i%len(r.sets)]
		set.socks[fd] = s
		if err := unix.EpollCtl(set.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}); err != nil { //nolint:gosec // G115: descriptors fit an int32
			r.stop()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	for _, set := range r.sets {
		r.wg.Go(set.run)
	}
	return r, nil
}

// descriptor is the socket's file descriptor, valid while conn is open.
func descriptor(conn *websocket.Conn) (int, error) {
	sc, ok := conn.NetConn().(syscall.Conn)
	if !ok {
		return 0, errors.New("the connection has no descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// stop ends the goroutines and waits for them; the sockets stay open.
func (r *reader) stop() {
	for _, set := range r.sets {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(set.wake, one[:])
	}
	r.wg.Wait()
	for _, set := range r.sets {
		_ = unix.Close(set.epfd)
		_ = unix.Close(set.wake)
	}
	r.sets = nil
}

// run waits for sockets with data and reads them, until woken by stop.
func (set *epollSet) run() {
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(set.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == set.wake {
				return
			}
			s := set.socks[fd]
			if s == nil {
				continue
			}
			m, err := unix.Read(fd, buf)
			switch {
			case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			case m > 0:
				s.feed(buf[:m], time.Now())
			default: // closed, or failed
				_ = unix.EpollCtl(set.epfd, unix.EPOLL_CTL_DEL, fd, nil)
				delete(set.socks, fd)
				s.ended()
			}
		}
	}
}

// feed takes bytes read from s at now: complete frames go to s.frame,
// the rest waits for the next read.
func (s *sock) feed(p []byte, now time.Time) {
	s.in = append(s.in, p...)
	for {
		opcode, payload, n, err := nextFrame(s.in)
		if err != nil {
			s.mu.Lock()
			s.parseErrs++
			s.mu.Unlock()
			s.in = s.in[:0]
			return
		}
		if n == 0 {
			break
		}
		switch opcode {
		case websocket.TextMessage:
			s.frame(payload, now)
		case websocket.PingMessage:
			s.wmu.Lock()
			_ = s.conn.WriteControl(websocket.PongMessage, payload, time.Now().Add(5*time.Second))
			s.wmu.Unlock()
		case websocket.CloseMessage:
			s.ended()
		}
		s.in = s.in[n:]
	}
	if len(s.in) == 0 {
		s.in = s.in[:0:0] // an idle socket keeps no buffer
	} else {
		s.in = append([]byte(nil), s.in...)
	}
}

// errFrame: the server sent what the benchmark does not expect (a masked
// or fragmented frame).
var errFrame = errors.New("unexpected WebSocket frame")

// nextFrame parses the first frame of b: its opcode, its payload (in b)
// and its length in bytes; n is 0 when b does not hold a whole frame.
func nextFrame(b []byte) (opcode int, payload []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, nil
	}
	if b[0]&0x80 == 0 || b[1]&0x80 != 0 {
		return 0, nil, 0, errFrame
	}
	opcode = int(b[0] & 0x0F)
	size, hdr := uint64(b[1]&0x7F), 2
	switch size {
	case 126:
		if len(b) < 4 {
			return 0, nil, 0, nil
		}
		size, hdr = uint64(binary.BigEndian.Uint16(b[2:4])), 4
	case 127:
		if len(b) < 10 {
			return 0, nil, 0, nil
		}
		size, hdr = binary.BigEndian.Uint64(b[2:10]), 10
	}
	if size > 1<<30 {
		return 0, nil, 0, errFrame
	}
	end := hdr + int(size)
	if len(b) < end {
		return 0, nil, 0, nil
	}
	return opcode, b[hdr:end], end, nil
}
