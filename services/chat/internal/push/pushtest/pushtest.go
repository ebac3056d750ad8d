// Package pushtest is a push service for tests (RFC 8030), on loopback: it
// hands out subscriptions whose keys it generated, and for every push it
// receives checks the VAPID authorization (RFC 8292: the ES256 JWT of
// `Authorization: vapid t=..., k=...` verifies against k, aud is the
// endpoint's origin, exp is within 24 hours) and decrypts the payload
// (RFC 8291 aes128gcm, with the subscription's private key and auth
// secret). A test reads what was pushed, decrypted, and can script the
// answers (404, 410, 429, 5xx) of an endpoint.
package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Push is one request the service received.
type Push struct {
	Endpoint string
	// Status is what the service answered.
	Status int
	// Err is why the push is invalid (VAPID or decryption); nil if valid.
	Err error
	// Payload is the decrypted plaintext (valid pushes).
	Payload []byte
	TTL     int
	Urgency string
	Topic   string
	// VAPIDKey is the k of the authorization (base64url); Subject its sub.
	VAPIDKey, Subject string
	At                time.Time
}

// JSON decodes the payload into a map.
func (p Push) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(p.Payload, &m)
	return m
}

// Subscription is a browser's subscription, keys generated here.
type Subscription struct {
	Endpoint string
	// P256dh and Auth are base64url, as a browser's toJSON gives them.
	P256dh, Auth string
	priv         *ecdh.PrivateKey
	auth         []byte
}

// Server is the test push service.
type Server struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	subs   map[string]*Subscription // by path
	script map[string][]int         // path -> the next answers
	pushes []Push
	wake   chan struct{}
}

// New starts a push service, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, subs: map[string]*Subscription{}, script: map[string][]int{}, wake: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Subscribe makes a new subscription (what pushManager.subscribe gives).
func (s *Server) Subscribe() *Subscription {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	path := "/push/" + strings.ToLower(rand.Text())
	sub := &Subscription{
		Endpoint: s.URL + path, priv: priv, auth: auth,
		P256dh: base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(auth),
	}
	s.mu.Lock()
	s.subs[path] = sub
	s.mu.Unlock()
	return sub
}

// JSON is the subscription as PushSubscription.toJSON() gives it.
func (sub *Subscription) JSON() map[string]any {
	return map[string]any{"endpoint": sub.Endpoint, "keys": map[string]any{"p256dh": sub.P256dh, "auth": sub.Auth}}
}

// Script makes the endpoint of sub answer the next pushes with statuses,
// in order (then 201 again).
func (s *Server) Script(sub *Subscription, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(sub.Endpoint, s.URL)
	s.script[path] = append(s.script[path], statuses...)
}

// Pushes returns every push received so far.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Match returns the pushes for which match is true.
func (s *Server) Match(match func(Push) bool) []Push {
	var out []Push
	for _, p := range s.Pushes() {
		if match(p) {
			out = append(out, p)
		}
	}
	return out
}

// WaitN waits until n pushes match, failing the test after timeout, and
// returns them.
func (s *Server) WaitN(n int, timeout time.Duration, match func(Push) bool) []Push {
	s.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		if got := s.Match(match); len(got) >= n {
			return got
		}
		select {
		case <-wake:
		case <-deadline.C:
			s.t.Fatalf("pushtest: %d matching pushes after %s, want %d; all: %v", len(s.Match(match)), timeout, n, summary(s.Pushes()))
			return nil
		}
	}
}

// Kind matches the valid pushes whose payload's kind is kind.
func Kind(kind string) func(Push) bool {
	return func(p Push) bool { return p.Err == nil && p.JSON()["kind"] == kind }
}

func summary(ps []Push) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  %d err=%v %s", p.Status, p.Err, p.Payload)
	}
	return b.String()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	p := Push{Endpoint: s.URL + r.URL.Path, At: time.Now(), Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic")}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	sub := s.subs[r.URL.Path]
	status := http.StatusCreated
	if q := s.script[r.URL.Path]; len(q) > 0 {
		status, s.script[r.URL.Path] = q[0], q[1:]
	}
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		p.Err, status = errors.New("method "+r.Method), http.StatusMethodNotAllowed
	case sub == nil:
		p.Err, status = errors.New("no such subscription"), http.StatusNotFound
	default:
		p.Err = s.check(r, sub, body, &p)
		if p.Err != nil && status < 300 {
			status = http.StatusBadRequest
		}
	}
	p.Status = status
	s.mu.Lock()
	s.pushes = append(s.pushes, p)
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	w.WriteHeader(status)
}

// check verifies the request and decrypts its body into p.
func (s *Server) check(r *http.Request, sub *Subscription, body []byte, p *Push) error {
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return fmt.Errorf("TTL header %q", r.Header.Get("TTL"))
	}
	p.TTL = ttl
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return fmt.Errorf("Content-Encoding %q, want aes128gcm", ce)
	}
	if err := checkVAPID(r.Header.Get("Authorization"), s.URL, p); err != nil {
		return fmt.Errorf("vapid: %w", err)
	}
	plain, err := Decrypt(body, sub.priv, sub.auth)
	if err != nil {
		return fmt.Errorf("decrypt: %w", err)
	}
	p.Payload = plain
	return nil
}

// checkVAPID checks an RFC 8292 authorization for a push service of
// origin.
func checkVAPID(h, origin string, p *Push) error {
	params, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return fmt.Errorf("authorization %q: want the vapid scheme", h)
	}
	var tok, k string
	for _, part := range strings.Split(params, ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			tok = v
		} else if v, ok := strings.CutPrefix(part, "k="); ok {
			k = v
		}
	}
	kb, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		return fmt.Errorf("k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(ecdhCurve(), kb)
	if err != nil {
		return fmt.Errorf("k is not a P-256 point: %w", err)
	}
	p.VAPIDKey = k
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("t is not a JWT")
	}
	var head struct{ Alg, Typ string }
	if err := decodeSegment(parts[0], &head); err != nil || head.Alg != "ES256" {
		return fmt.Errorf("JWT header %+v: want alg ES256 (%w)", head, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return errors.New("JWT signature: want 64 bytes r||s")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("JWT signature does not verify against k")
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	if claims.Aud != origin {
		return fmt.Errorf("aud %q, want %q", claims.Aud, origin)
	}
	now := time.Now().Unix()
	if claims.Exp <= now || claims.Exp > now+24*3600 {
		return fmt.Errorf("exp %d is not within 24 h of now (%d)", claims.Exp, now)
	}
	if !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https:") {
		return fmt.Errorf("sub %q: want a mailto or https URL", claims.Sub)
	}
	p.Subject = claims.Sub
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Decrypt opens an RFC 8291 aes128gcm body (one record) with the user
// agent's private key and auth secret.
func Decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("keyid of %d bytes, want the 65-byte sender key", idlen)
	}
	asPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("keyid: %w", err)
	}
	ct := body[21+idlen:]
	if rs < 18 || len(ct) > int(rs) {
		return nil, fmt.Errorf("record size %d for %d bytes: want one record", rs, len(ct))
	}
	shared, err := priv.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	info := append([]byte("WebPush: info\x00"), priv.PublicKey().Bytes()...)
	info = append(info, asPub.Bytes()...)
	ikm, err := hkdf.Key(sha256.New, shared, auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("AES-GCM: %w", err)
	}
	// The last record: data, 0x02, zero padding.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("no last-record delimiter (0x02)")
	}
	return plain[:i], nil
}

func ecdhCurve() elliptic.Curve { return elliptic.P256() }
