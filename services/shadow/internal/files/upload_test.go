package files_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
)

// multipartBody is a multipart/form-data body with one part per file (field,
// file name, content), and its Content-Type.
func multipartBody(t *testing.T, parts ...[3]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		fw, err := w.CreateFormFile(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(p[2])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func (e *env) upload(t *testing.T, dir string, parts ...[3]string) answer {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	return e.do(t, http.MethodPost, "/api/file/upload?path="+q(dir), body, map[string]string{"Content-Type": ct})
}

// created decodes a 201 answer.
func created(t *testing.T, what string, a answer) fileAnswer {
	t.Helper()
	var w fileAnswer
	if a.status != http.StatusCreated {
		t.Fatalf("%s: status %d, want 201: %s", what, a.status, a.body)
	}
	if err := json.Unmarshal(a.body, &w); err != nil {
		t.Fatalf("%s: %v: %s", what, err, a.body)
	}
	return w
}

func TestUploadIntoDirectory(t *testing.T) {
	e := mustEnv(t, nil)
	bin := "\x89PNG\r\n\x1a\n\x00\x00binary\xff"
	w := created(t, "upload", e.upload(t, e.home+"/dir", [3]string{"file", "pic.png", bin}))
	if w.Path != e.home+"/dir/pic.png" || w.Size != int64(len(bin)) || w.Version == "" {
		t.Fatalf("answer %+v", w)
	}
	wantContent(t, e.home+"/dir/pic.png", bin)

	// Never replaces a file: 409, the file as it was.
	wantError(t, e.upload(t, e.home+"/dir", [3]string{"file", "pic.png", "other"}), 409, protocol.CodeConflict)
	wantContent(t, e.home+"/dir/pic.png", bin)

	// The name is reduced to its last element and cleaned: no way out of the directory.
	for name, want := range map[string]string{"../../escape.txt": "escape.txt", `..\evil.txt`: "evil.txt", "a/b/c d.txt": "c d.txt", "..": "file", "we;ird$.txt": "we_ird_.txt"} {
		if got := created(t, "upload "+name, e.upload(t, e.home+"/dir/sub", [3]string{"file", name, "x"})).Path; got != e.home+"/dir/sub/"+want {
			t.Errorf("upload %q landed at %s, want %s", name, got, e.home+"/dir/sub/"+want)
		}
	}
	if _, err := os.Stat(e.home + "/escape.txt"); err == nil {
		t.Error("a name with .. left the directory")
	}
}

func TestUploadRefusals(t *testing.T) {
	e := mustEnv(t, nil)
	file := [3]string{"file", "n.txt", "x"}
	cases := []struct {
		name   string
		got    func() answer
		status int
		code   string
	}{
		{"not multipart", func() answer {
			return e.do(t, http.MethodPost, "/api/file/upload?path="+q(e.home), []byte(`{"a":1}`), nil)
		}, 415, protocol.CodeUnsupportedMedia},
		{"no path", func() answer {
			body, ct := multipartBody(t, file)
			return e.do(t, http.MethodPost, "/api/file/upload", body, map[string]string{"Content-Type": ct})
		}, 400, protocol.CodeBadRequest},
		{"relative path", func() answer { return e.upload(t, "dir", file) }, 400, protocol.CodeBadRequest},
		{"no file part", func() answer { return e.upload(t, e.home, [3]string{"other", "n.txt", "x"}) }, 400, protocol.CodeBadRequest},
		{"file twice", func() answer { return e.upload(t, e.home, file, file) }, 400, protocol.CodeBadRequest},
		{"missing directory", func() answer { return e.upload(t, e.home+"/nope", file) }, 404, protocol.CodeNotFound},
		{"a file as the directory", func() answer { return e.upload(t, e.home+"/a.txt", file) }, 400, protocol.CodeBadRequest},
		{"outside the roots", func() answer { return e.upload(t, e.outside, file) }, 403, protocol.CodeForbidden},
		{"through a link out", func() answer { return e.upload(t, e.home+"/link_out", file) }, 403, protocol.CodeForbidden},
		{"dotdot out", func() answer { return e.upload(t, e.home+"/../outside", file) }, 403, protocol.CodeForbidden},
		{"too large", func() answer {
			return e.upload(t, e.home, [3]string{"file", "big.bin", string(make([]byte, 25<<20+1))})
		}, 413, protocol.CodePayloadTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.got(), c.status, c.code)
		})
	}
	for _, p := range []string{e.outside + "/n.txt", e.home + "/big.bin", e.home + "/nope"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created by a refused upload", p)
		}
	}
}

func TestUploadNeverWritesSecrets(t *testing.T) {
	e := mustEnv(t, nil)
	e.secrets(t)
	for _, dir := range []string{"~/.config/svc-code", e.home + "/cfg", e.home + "/.svc-code", e.home + "/.svc-code/projects"} {
		wantRefused(t, "upload into "+dir, e.upload(t, dir, [3]string{"file", "config.yaml", "overwritten\n"}))
	}
	for _, p := range []string{e.home + "/dotfiles/config/svc-code/n.yaml", e.home + "/.svc-code/config.yaml"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}
