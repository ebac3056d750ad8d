package app

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// multipartFile is a multipart body carrying data in the field "file".
func multipartFile(t *testing.T, filename string, data []byte) (body, contentType string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String(), w.FormDataContentType()
}

func (c *chat) upload(path, filename string, data []byte) answer {
	c.t.Helper()
	body, ct := multipartFile(c.t, filename, data)
	return c.send(http.MethodPost, path, body, ct, testSecret)
}

// TestUploadsAcrossInstances: two instances sharing PostgreSQL and a data
// home (one host): a session made on one takes uploads on the other, names
// never collide across them, and the limits answer 413 with the envelope.
func TestUploadsAcrossInstances(t *testing.T) {
	dbURL, home := pgmigratetest.MustSchema(t), t.TempDir()
	extra := map[string]string{"SVC_CODE_HOME": home, "CHAT_UPLOAD_FILE_MAX_MB": "1"}
	a := startInstance(t, dbURL, extra, nil, nil, nil)
	b := startInstance(t, dbURL, extra, nil, nil, nil)
	id := a.mustSession(t.TempDir())

	got := b.upload("/api/upload-file?session="+id, "notes.md", []byte("# notes\n"))
	got.want(t, http.StatusCreated, "")
	first := filepath.Join(home, "uploads", id, "notes.md")
	if got.str("path") != first {
		t.Errorf("path: got %q, want %q", got.str("path"), first)
	}
	got = a.upload("/api/upload-file?session="+id, "notes.md", []byte("second"))
	got.want(t, http.StatusCreated, "")
	if got.str("name") != "notes-1.md" {
		t.Errorf("second upload on the other instance: got %s", got.raw)
	}
	if stored, err := os.ReadFile(first); err != nil || string(stored) != "# notes\n" {
		t.Errorf("first file: %q %v", stored, err)
	}

	// A 1x1 GIF: the image block comes back ready for user_message.
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	got = b.upload("/api/upload-image?session="+id, "dot.gif", gif)
	got.want(t, http.StatusCreated, "")
	block, _ := got.body["block"].(map[string]any)
	if src, _ := block["source"].(map[string]any); block["type"] != "image" || src["media_type"] != "image/gif" || src["type"] != "base64" {
		t.Errorf("block: %s", got.raw)
	}

	a.upload("/api/upload-file?session=ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "x.txt", []byte("x")).want(t, http.StatusNotFound, "not_found")
	a.upload("/api/upload-image?session="+id, "x.png", []byte("plain text")).want(t, http.StatusBadRequest, "bad_request")
	a.do(http.MethodPost, "/api/upload-file?session="+id, `{"file":"x"}`).want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	// Over CHAT_UPLOAD_FILE_MAX_MB: the route's 413.
	got = a.upload("/api/upload-file?session="+id, "big.bin", bytes.Repeat([]byte{1}, 1<<20+1))
	got.want(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	if !strings.Contains(got.str("message"), "at most 1048576") {
		t.Errorf("message: %s", got.raw)
	}
	// (A body over BODY_LIMIT_MB is refused by the server before the route,
	// with the same envelope: svchttptest's contract checks that for every
	// service, reading the answer while the upload is cut off.)

	entries, err := os.ReadDir(filepath.Join(home, "uploads", id))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[dot.gif notes-1.md notes.md]" {
		t.Errorf("stored: %v (bad uploads must store nothing)", names)
	}
}
