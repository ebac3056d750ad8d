package authtoken

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testParams keeps argon2 cheap under -race; production uses DefaultParams.
var testParams = HashParams{Time: 1, MemoryKiB: 1024, Threads: 1}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse", testParams)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Errorf("hash %q is not a PHC argon2id string", h)
	}
	if strings.Contains(h, "correct horse") {
		t.Error("hash contains the password")
	}
	if ok, err := VerifyPassword(h, "correct horse"); !ok || err != nil {
		t.Errorf("VerifyPassword(right) = %v, %v", ok, err)
	}
	if ok, err := VerifyPassword(h, "correct horsE"); ok || err != nil {
		t.Errorf("VerifyPassword(wrong) = %v, %v", ok, err)
	}
	h2, _ := HashPassword("correct horse", testParams)
	if h2 == h {
		t.Error("two hashes of one password are equal: salt not random")
	}
	if _, err := HashPassword("", testParams); err == nil {
		t.Error("empty password accepted")
	}
}

func TestVerifyPasswordRejectsBadHashes(t *testing.T) {
	for _, h := range []string{
		"", "plain", "$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=18$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=1024,t=0,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=1024,t=1,p=1$!!$aGFzaGhhc2hoYXNoaGFzaA",
	} {
		if ok, err := VerifyPassword(h, "x"); ok || err == nil {
			t.Errorf("VerifyPassword(%q) = %v, %v; want an error", h, ok, err)
		}
	}
}

func TestAPIToken(t *testing.T) {
	key, err := DeriveTokenKey("pw", testParams)
	if err != nil {
		t.Fatal(err)
	}
	tok := APIToken(key, 3)
	if !strings.HasPrefix(tok, "svct_3_") {
		t.Errorf("token %q lacks its prefix and epoch", tok)
	}
	if err := CheckAPIToken(key, 3, tok); err != nil {
		t.Errorf("current token refused: %v", err)
	}
	if err := CheckAPIToken(key, 4, tok); !errors.Is(err, ErrStale) {
		t.Errorf("old-epoch token: err = %v, want ErrStale", err)
	}
	forged := "svct_4_" + strings.SplitN(tok, "_", 3)[2]
	if err := CheckAPIToken(key, 4, forged); !errors.Is(err, ErrInvalid) {
		t.Errorf("token with its epoch edited: err = %v, want ErrInvalid", err)
	}
	other, _ := DeriveTokenKey("pw", testParams)
	if err := CheckAPIToken(other, 3, tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("token under another key (password rotated): err = %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"", "pw", "svct_", "svct_3", "svct_x_" + strings.Repeat("a", 43), "svct_03_" + strings.Repeat("a", 43), "svct_-1_" + strings.Repeat("a", 43), "svct_3_short"} {
		if err := CheckAPIToken(key, 3, bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("CheckAPIToken(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestCookie(t *testing.T) {
	secret, _ := NewSecret(32)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := SignCookie(secret, 2, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCookie(secret, 2, c, now.Add(time.Minute)); err != nil {
		t.Errorf("fresh cookie refused: %v", err)
	}
	if err := CheckCookie(secret, 3, c, now); !errors.Is(err, ErrStale) {
		t.Errorf("old-epoch cookie: %v, want ErrStale", err)
	}
	if err := CheckCookie(secret, 2, c, now.Add(2*time.Hour)); !errors.Is(err, ErrInvalid) {
		t.Errorf("expired cookie: %v, want ErrInvalid", err)
	}
	other, _ := NewSecret(32)
	if err := CheckCookie(other, 2, c, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("cookie under another secret: %v, want ErrInvalid", err)
	}
	// alg "none" and a token signed by an API token key must not pass.
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJjZSI6MiwiaXNzIjoic3ZjLWNvZGUiLCJleHAiOjQxMDI0NDQ4MDB9."
	if err := CheckCookie(secret, 2, none, now); err == nil {
		t.Error("alg=none cookie accepted")
	}
	key, _ := DeriveTokenKey("pw", testParams)
	if err := CheckCookie(secret, 0, APIToken(key, 0), now); !errors.Is(err, ErrMalformed) {
		t.Errorf("API token as cookie: %v, want ErrMalformed", err)
	}
	if err := CheckAPIToken(key, 2, c); !errors.Is(err, ErrMalformed) {
		t.Errorf("cookie as API token: %v, want ErrMalformed", err)
	}
}

func TestGeneratePassword(t *testing.T) {
	a, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GeneratePassword()
	if a == b || len(a) != 29 {
		t.Errorf("GeneratePassword() = %q, %q", a, b)
	}
}

func FuzzParseAPIToken(f *testing.F) {
	key := []byte("k")
	f.Add(APIToken(key, 0))
	f.Add("svct_1_x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		epoch, _, err := ParseAPIToken(s)
		if err == nil && APIToken(key, epoch) == s {
			if CheckAPIToken(key, epoch, s) != nil {
				t.Errorf("own token %q refused", s)
			}
		}
		if err == nil && epoch < 0 {
			t.Errorf("negative epoch parsed from %q", s)
		}
	})
}

func FuzzCheckCookie(f *testing.F) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_700_000_000, 0)
	good, _ := SignCookie(secret, 1, now, time.Hour)
	f.Add(good)
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		if CheckCookie(secret, 1, s, now) == nil && s != good {
			// Only the exact token we signed (or an equivalent encoding of
			// it) may pass; anything accepted must still carry epoch 1.
			if err := CheckCookie(secret, 2, s, now); !errors.Is(err, ErrStale) {
				t.Errorf("accepted %q without epoch 1", s)
			}
		}
	})
}

func TestCookieID(t *testing.T) {
	secret, _ := NewSecret(32)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := SignCookie(secret, 0, now, time.Hour)
	b, _ := SignCookie(secret, 0, now, time.Hour)
	ca, err := VerifyCookie(secret, 0, a, now)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := VerifyCookie(secret, 0, b, now)
	if ca.ID == "" || ca.ID == cb.ID {
		t.Errorf("two cookies of the same second have ids %q and %q, want distinct", ca.ID, cb.ID)
	}
	if strings.HasPrefix(ca.ID, "sig:") {
		t.Errorf("a new cookie is named by its signature (%q), want its jti", ca.ID)
	}
	if !ca.Expires.Equal(now.Add(time.Hour)) {
		t.Errorf("expires = %v, want %v", ca.Expires, now.Add(time.Hour))
	}
	if _, err := VerifyCookie(secret, 1, a, now); !errors.Is(err, ErrStale) {
		t.Errorf("old-epoch cookie: %v, want ErrStale", err)
	}

	// A cookie issued before cookies carried a jti is named by its
	// signature, whatever base64 spelling of it is sent.
	old, err := jwt.NewWithClaims(jwt.SigningMethodHS256, CookieClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: cookieIssuer, Subject: "browser", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	co, err := VerifyCookie(secret, 0, old, now)
	if err != nil {
		t.Fatalf("a cookie without jti is refused: %v", err)
	}
	if !strings.HasPrefix(co.ID, "sig:") || len(co.ID) != len("sig:")+32 {
		t.Errorf("id of a cookie without jti = %q, want sig:<32 hex>", co.ID)
	}
	// The last character of a 32-byte signature carries 2 unused bits:
	// flip them and the same signature is spelt differently.
	last := old[len(old)-1]
	i := strings.IndexByte(b64url, last)
	respelt := old[:len(old)-1] + string(b64url[i^1])
	cr, err := VerifyCookie(secret, 0, respelt, now)
	if err != nil {
		t.Fatalf("the same signature spelt otherwise is refused: %v", err)
	}
	if respelt == old || cr.ID != co.ID {
		t.Errorf("the same signature spelt otherwise has id %q, want %q", cr.ID, co.ID)
	}
}

const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
