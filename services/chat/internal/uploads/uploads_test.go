package uploads

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

const testSecret = "0123456789abcdef-uploads-tests"

// knownSessions stands for the session store in these handler tests; the
// app tests run the routes against PostgreSQL.
type knownSessions map[string]bool

func (k knownSessions) Get(_ context.Context, id string) (store.Session, error) {
	if !k[id] {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return store.Session{ID: id}, nil
}

func mustPNG(t testing.TB, w, h int, noise bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(x), uint8(y), 200, 255}
			if noise {
				c = color.NRGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), []color.Color{color.Black, color.White})
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrepareImage(t *testing.T) {
	webp := mustRead(t, filepath.Join("testdata", "photo.webp")) // 600×400, from golang.org/x/image's testdata
	small := mustPNG(t, 40, 30, false)
	noise := mustPNG(t, 400, 400, true)
	tests := []struct {
		name          string
		raw           []byte
		lim           ImageLimits
		wantType      string
		wantW, wantH  int
		scaled, reenc bool
		wantErr       error
	}{
		{"small png kept", small, DefaultImageLimits, "image/png", 40, 30, false, false, nil},
		{"small gif kept", mustGIF(t, 20, 10), DefaultImageLimits, "image/gif", 20, 10, false, false, nil},
		{"webp kept", webp, DefaultImageLimits, "image/webp", 600, 400, false, false, nil},
		{"wide png scaled", mustPNG(t, 3000, 120, false), DefaultImageLimits, "image/png", 1568, 62, true, true, nil},
		{"tall jpeg scaled stays jpeg", mustJPEG(t, 300, 1700), DefaultImageLimits, "image/jpeg", 276, 1568, true, true, nil},
		{"webp scaled becomes png", webp, ImageLimits{MaxSide: 300, MaxBase64: 5e6, MaxPixels: 1e8}, "image/png", 300, 200, true, true, nil},
		{"gif scaled becomes png", mustGIF(t, 200, 100), ImageLimits{MaxSide: 50, MaxBase64: 5e6, MaxPixels: 1e8}, "image/png", 50, 25, true, true, nil},
		{"heavy png re-encoded as jpeg", noise, ImageLimits{MaxSide: 1568, MaxBase64: 600e3, MaxPixels: 1e8}, "image/jpeg", 400, 400, false, true, nil},
		{"heavy png shrunk until it fits", noise, ImageLimits{MaxSide: 1568, MaxBase64: 100e3, MaxPixels: 1e8}, "image/jpeg", 0, 0, true, true, nil},
		{"text", []byte("hello, not an image"), DefaultImageLimits, "", 0, 0, false, false, ErrNotImage},
		{"pdf", []byte("%PDF-1.4\n..."), DefaultImageLimits, "", 0, 0, false, false, ErrNotImage},
		{"truncated png", small[:60], DefaultImageLimits, "", 0, 0, false, false, ErrBadImage},
		{"too many pixels", small, ImageLimits{MaxSide: 1568, MaxBase64: 5e6, MaxPixels: 1000}, "", 0, 0, false, false, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, err := PrepareImage(tt.raw, tt.lim)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if im.MediaType != tt.wantType || im.Scaled != tt.scaled || im.Reencoded != tt.reenc {
				t.Errorf("got %s scaled=%v reencoded=%v, want %s %v %v", im.MediaType, im.Scaled, im.Reencoded, tt.wantType, tt.scaled, tt.reenc)
			}
			if tt.wantW != 0 && (im.Width != tt.wantW || im.Height != tt.wantH) {
				t.Errorf("got %d×%d, want %d×%d", im.Width, im.Height, tt.wantW, tt.wantH)
			}
			// What is answered is what it says: decode it again.
			cfg, format, err := image.DecodeConfig(bytes.NewReader(im.Data))
			if err != nil || "image/"+format != im.MediaType || cfg.Width != im.Width || cfg.Height != im.Height {
				t.Errorf("data: %s %d×%d (%v), answer says %s %d×%d", format, cfg.Width, cfg.Height, err, im.MediaType, im.Width, im.Height)
			}
			if n := base64.StdEncoding.EncodedLen(len(im.Data)); n > tt.lim.MaxBase64 || max(im.Width, im.Height) > tt.lim.MaxSide {
				t.Errorf("over the limits: base64 %d bytes, %d×%d", n, im.Width, im.Height)
			}
			if !im.Reencoded && !bytes.Equal(im.Data, tt.raw) {
				t.Error("an image within the limits was changed")
			}
		})
	}
}

func TestSafeName(t *testing.T) {
	tests := map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`C:\Users\me\notes.txt`:           "notes.txt",
		".bashrc":                         "bashrc",
		"..":                              "file",
		"":                                "file",
		"/":                               "file",
		"a b(1).tar.gz":                   "a b(1).tar.gz",
		"évé ünïcode.md":                  "évé ünïcode.md",
		"x\x00y\n$z;`rm`.sh":              "x_y__z__rm_.sh",
		"***":                             "file",
		strings.Repeat("a", 200) + ".txt": strings.Repeat("a", 116) + ".txt",
	}
	for in, want := range tests {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSafeName(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", `..\..\y`, "\x00", "é" + strings.Repeat("é", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := SafeName(in)
		if got == "" || strings.ContainsAny(got, "/\\\x00") || strings.HasPrefix(got, ".") || len(got) > maxNameBytes {
			t.Fatalf("SafeName(%q) = %q", in, got)
		}
		if filepath.Base(got) != got || got == ".." {
			t.Fatalf("SafeName(%q) = %q is not one path element", in, got)
		}
	})
}

// env is a fiber app serving the upload routes on a data home of its own.
type env struct {
	app      *fiber.App
	dataHome string
}

func newEnv(t *testing.T, maxImage, maxFile int64) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 32 << 20, Log: log})
	e := &env{app: app, dataHome: t.TempDir()}
	Register(app, Deps{
		DataHome: e.dataHome, Sessions: knownSessions{"S1": true},
		MaxImageBytes: maxImage, MaxFileBytes: maxFile, Log: log,
	})
	return e
}

// part is one part of a multipart body.
type part struct {
	field, filename, contentType string
	data                         []byte
}

func multipartBody(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.field, p.filename))
		if p.filename == "" {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.field))
		}
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = pw.Write(p.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.Bytes()
}

type answer struct {
	status int
	body   map[string]any
	raw    string
}

func (e *env) post(t *testing.T, path, contentType string, body []byte) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("POST %s: not JSON: %s", path, raw)
	}
	return a
}

func (e *env) upload(t *testing.T, path string, parts ...part) answer {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	return e.post(t, path, ct, body)
}

func (a answer) want(t *testing.T, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("got %d %s, want %d", a.status, a.raw, status)
	}
	if got, _ := a.body["error"].(string); code != "" && got != code {
		t.Fatalf("got error %q (%s), want %q", got, a.raw, code)
	}
}

func TestUploadImage(t *testing.T) {
	e := newEnv(t, 0, 0)
	wide := mustPNG(t, 2000, 100, false)
	// The part claims JPEG; the content is PNG, and PNG is what counts.
	got := e.upload(t, "/api/upload-image?session=S1", part{"file", "../screen shot.jpg", "image/jpeg", wide})
	got.want(t, http.StatusCreated, "")
	wantPath := filepath.Join(e.dataHome, "uploads", "S1", "screen shot.png")
	if got.body["path"] != wantPath || got.body["media_type"] != "image/png" || got.body["width"] != float64(1568) ||
		got.body["scaled"] != true || got.body["session_id"] != "S1" {
		t.Errorf("answer: %s", got.raw)
	}
	orig, _ := got.body["original"].(map[string]any)
	if orig["width"] != float64(2000) || orig["size"] != float64(len(wide)) || orig["media_type"] != "image/png" {
		t.Errorf("original: %v", orig)
	}
	block, _ := got.body["block"].(map[string]any)
	source, _ := block["source"].(map[string]any)
	data, err := base64.StdEncoding.DecodeString(fmt.Sprint(source["data"]))
	if block["type"] != "image" || source["type"] != "base64" || source["media_type"] != "image/png" || err != nil {
		t.Fatalf("block: %v (%v)", block["type"], err)
	}
	if stored := mustRead(t, wantPath); !bytes.Equal(stored, data) || got.body["size"] != float64(len(stored)) {
		t.Error("the stored file is not the block's image")
	}

	// A second image of the same name does not replace the first.
	small := mustGIF(t, 10, 10)
	got = e.upload(t, "/api/upload-image?session=S1", part{"file", "screen shot.png", "", small})
	got.want(t, http.StatusCreated, "")
	if got.body["name"] != "screen shot.gif" {
		t.Errorf("second name: %s", got.body["name"])
	}
	got = e.upload(t, "/api/upload-image?session=S1", part{"file", "screen shot.png", "", wide})
	if got.body["name"] != "screen shot-1.png" {
		t.Errorf("third name: got %v, want screen shot-1.png", got.body["name"])
	}
	if !bytes.Equal(mustRead(t, wantPath), data) {
		t.Error("the first image was overwritten")
	}
}

func TestUploadFile(t *testing.T) {
	e := newEnv(t, 0, 1000)
	content := []byte("col1,col2\n1,2\n")
	got := e.upload(t, "/api/upload-file?session=S1", part{"file", `..\..\data.csv`, "application/octet-stream", content})
	got.want(t, http.StatusCreated, "")
	first := filepath.Join(e.dataHome, "uploads", "S1", "data.csv")
	if got.body["path"] != first || got.body["size"] != float64(len(content)) || got.body["original_name"] != `..\..\data.csv` ||
		!strings.HasPrefix(fmt.Sprint(got.body["media_type"]), "text/plain") {
		t.Errorf("answer: %s", got.raw)
	}
	for i := 1; i <= 2; i++ {
		got = e.upload(t, "/api/upload-file?session=S1", part{"file", "data.csv", "", []byte(fmt.Sprint("version ", i))})
		got.want(t, http.StatusCreated, "")
		if want := filepath.Join(e.dataHome, "uploads", "S1", fmt.Sprintf("data-%d.csv", i)); got.body["path"] != want {
			t.Errorf("upload %d: path %v, want %s", i, got.body["path"], want)
		}
	}
	if !bytes.Equal(mustRead(t, first), content) {
		t.Error("the first file was overwritten")
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	// Exactly the limit passes.
	e.upload(t, "/api/upload-file?session=S1", part{"file", "full.bin", "", bytes.Repeat([]byte{7}, 1000)}).want(t, http.StatusCreated, "")
}

// TestBadUploads: each bad request gets its error and stores nothing.
func TestBadUploads(t *testing.T) {
	e := newEnv(t, 2000, 1000)
	png := mustPNG(t, 10, 10, false)
	file := func(data []byte) part { return part{"file", "x.png", "image/png", data} }
	tests := []struct {
		name   string
		path   string
		parts  []part
		ctype  string // when set, the raw body "x" is sent with it
		status int
		code   string
	}{
		{"image too large", "/api/upload-image?session=S1", []part{file(bytes.Repeat([]byte{1}, 2001))}, "", 413, "payload_too_large"},
		{"file too large", "/api/upload-file?session=S1", []part{file(bytes.Repeat([]byte{1}, 1001))}, "", 413, "payload_too_large"},
		{"not an image", "/api/upload-image?session=S1", []part{{"file", "x.png", "image/png", []byte("<html>not a png</html>")}}, "", 400, "bad_request"},
		{"corrupt image", "/api/upload-image?session=S1", []part{file(png[:50])}, "", 400, "bad_request"},
		{"empty file", "/api/upload-file?session=S1", []part{file(nil)}, "", 400, "bad_request"},
		{"no file field", "/api/upload-file?session=S1", []part{{"other", "x.txt", "", []byte("x")}}, "", 400, "bad_request"},
		{"file as a plain field", "/api/upload-file?session=S1", []part{{"file", "", "", []byte("x")}}, "", 400, "bad_request"},
		{"two files", "/api/upload-file?session=S1", []part{file(png), file(png)}, "", 400, "bad_request"},
		{"no session", "/api/upload-file", []part{file(png)}, "", 400, "bad_request"},
		{"unknown session", "/api/upload-image?session=NOPE", []part{file(png)}, "", 404, "not_found"},
		{"unsafe session", "/api/upload-file?session=..%2F..%2Ftmp", []part{file(png)}, "", 404, "not_found"},
		{"json body", "/api/upload-file?session=S1", nil, "application/json", 415, "unsupported_media_type"},
		{"no content type", "/api/upload-image?session=S1", nil, "-", 415, "unsupported_media_type"},
		{"multipart without boundary", "/api/upload-file?session=S1", nil, "multipart/form-data", 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got answer
			switch tt.ctype {
			case "":
				got = e.upload(t, tt.path, tt.parts...)
			case "-":
				got = e.post(t, tt.path, "", []byte("x"))
			default:
				got = e.post(t, tt.path, tt.ctype, []byte("x"))
			}
			got.want(t, tt.status, tt.code)
		})
	}
	if _, err := os.Stat(filepath.Join(e.dataHome, "uploads")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad uploads stored something: %v", err)
	}
}

// FuzzPrepareImage: whatever the bytes, no panic, and an accepted image is
// one of the four types within the limits.
func FuzzPrepareImage(f *testing.F) {
	f.Add(mustPNG(f, 4, 3, false))
	f.Add(mustGIF(f, 5, 2))
	f.Add(mustJPEG(f, 3, 3))
	f.Add(mustRead(f, filepath.Join("testdata", "photo.webp")))
	f.Add([]byte("GIF89a"))
	lim := ImageLimits{MaxSide: 64, MaxBase64: 1 << 20, MaxPixels: 1 << 16}
	f.Fuzz(func(t *testing.T, raw []byte) {
		im, err := PrepareImage(raw, lim)
		if err != nil {
			return
		}
		if _, ok := imageTypes[im.MediaType]; !ok || max(im.Width, im.Height) > lim.MaxSide || len(im.Data) == 0 {
			t.Fatalf("accepted %s %d×%d", im.MediaType, im.Width, im.Height)
		}
	})
}
