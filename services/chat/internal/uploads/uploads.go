// Package uploads stores what the user attaches to a session's prompts:
// POST /api/upload-image takes a png, jpeg, gif or webp image (recognised
// by its content, not by what the upload claims), scales it down to what
// the models accept and answers the image block ready for a user_message;
// POST /api/upload-file takes any file. Both are multipart with the field
// `file` and the session as the query parameter `session`, and store the
// file under <data home>/uploads/<session>/ with a safe name, never
// replacing an earlier file (a "-N" suffix is added instead). The answer
// carries the stored file's absolute path.
//
// The files live on the disk of the instance that served the upload:
// instances that share a data home (one host, or a shared volume) all see
// them; an agent on another host does not.
package uploads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"regexp"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Default size limits of an upload.
const (
	DefaultMaxImageBytes = 20 << 20
	DefaultMaxFileBytes  = 25 << 20
)

// Field is the multipart field that carries the file.
const Field = "file"

// Sessions finds sessions (internal/store).
type Sessions interface {
	Get(ctx context.Context, id string) (store.Session, error)
}

var _ Sessions = (*store.Store)(nil)

// Deps is what the routes need.
type Deps struct {
	// DataHome holds the uploads (<DataHome>/uploads/<session>/).
	DataHome string
	Sessions Sessions
	// MaxImageBytes and MaxFileBytes bound an upload's size (defaults
	// DefaultMaxImageBytes, DefaultMaxFileBytes); the HTTP server's body
	// limit applies first.
	MaxImageBytes int64
	MaxFileBytes  int64
	// Images are the limits images are made to fit (DefaultImageLimits).
	Images ImageLimits
	Log    *slog.Logger
}

// MaxConcurrentDecodes is how many images are decoded at once; more
// uploads wait. An image of MaxPixels takes up to 8 bytes a pixel decoded
// (400 MB with the defaults) from an upload of a few KB, so the number of
// decodes, not of uploads, bounds the memory.
const MaxConcurrentDecodes = 2

type server struct {
	Deps
	decodes chan struct{}
}

// Register adds POST /api/upload-image and POST /api/upload-file to app.
func Register(app *fiber.App, d Deps) {
	if d.MaxImageBytes <= 0 {
		d.MaxImageBytes = DefaultMaxImageBytes
	}
	if d.MaxFileBytes <= 0 {
		d.MaxFileBytes = DefaultMaxFileBytes
	}
	if d.Images == (ImageLimits{}) {
		d.Images = DefaultImageLimits
	}
	s := &server{Deps: d, decodes: make(chan struct{}, MaxConcurrentDecodes)}
	app.Post("/api/upload-image", s.uploadImage)
	app.Post("/api/upload-file", s.uploadFile)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

var sessionPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// upload is a checked upload request: its session and its file.
type upload struct {
	session string
	dir     string
	header  *multipart.FileHeader
}

// receive checks what every upload needs, in order: a multipart body
// (415), the session query parameter (400) of a known session (404), one
// `file` part (400) within max bytes (413).
func (s *server) receive(c *fiber.Ctx, limit int64, what string) (upload, error) {
	mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != fiber.MIMEMultipartForm {
		return upload{}, protocol.Errorf(protocol.CodeUnsupportedMedia, "send multipart/form-data with the %s in the field %q", what, Field)
	}
	session := string([]byte(c.Query("session")))
	if session == "" {
		return upload{}, badRequest("the query parameter session is required")
	}
	if !sessionPattern.MatchString(session) {
		return upload{}, protocol.Errorf(protocol.CodeNotFound, "no session %q", session)
	}
	if _, err := s.Sessions.Get(c.UserContext(), session); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return upload{}, protocol.Errorf(protocol.CodeNotFound, "no session %q", session)
		}
		return upload{}, err
	}
	form, err := c.MultipartForm()
	if err != nil {
		return upload{}, badRequest("malformed multipart body: %v", err)
	}
	files := form.File[Field]
	switch {
	case len(files) == 0:
		return upload{}, badRequest("no %s: send it in the multipart field %q", what, Field)
	case len(files) > 1:
		return upload{}, badRequest("one %s per request: the field %q came %d times", what, Field, len(files))
	}
	if files[0].Size > limit {
		return upload{}, protocol.Errorf(protocol.CodePayloadTooLarge, "the %s is %d bytes: at most %d", what, files[0].Size, limit)
	}
	if files[0].Size == 0 {
		return upload{}, badRequest("the %s is empty", what)
	}
	return upload{session: session, dir: filepath.Join(s.DataHome, "uploads", session), header: files[0]}, nil
}

// imageAnswer is the answer of POST /api/upload-image.
type imageAnswer struct {
	SessionID string         `json:"session_id"`
	Path      string         `json:"path"`
	Name      string         `json:"name"`
	Size      int64          `json:"size"`
	MediaType string         `json:"media_type"`
	Width     int            `json:"width"`
	Height    int            `json:"height"`
	Scaled    bool           `json:"scaled"`
	Reencoded bool           `json:"reencoded"`
	Original  imageOriginal  `json:"original"`
	Block     map[string]any `json:"block"`
}

type imageOriginal struct {
	Name      string `json:"name"`
	Size      int    `json:"size"`
	MediaType string `json:"media_type"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

func (s *server) uploadImage(c *fiber.Ctx) error {
	up, err := s.receive(c, s.MaxImageBytes, "image")
	if err != nil {
		return err
	}
	raw, err := readAll(up.header, s.MaxImageBytes)
	if err != nil {
		return err
	}
	s.decodes <- struct{}{}
	im, err := PrepareImage(raw, s.Images)
	<-s.decodes
	switch {
	case errors.Is(err, ErrNotImage), errors.Is(err, ErrBadImage):
		return badRequest("%s", err.Error())
	case errors.Is(err, ErrTooLarge):
		return protocol.Errorf(protocol.CodePayloadTooLarge, "%s", err.Error())
	case err != nil:
		return err
	}
	name := withExt(SafeName(up.header.Filename), imageTypes[im.MediaType])
	if up.header.Filename == "" || SafeName(up.header.Filename) == "file" {
		name = withExt("image", imageTypes[im.MediaType])
	}
	path, size, err := save(up.dir, name, bytes.NewReader(im.Data))
	if err != nil {
		return err
	}
	s.Log.InfoContext(c.UserContext(), "image uploaded", "session_id", up.session, "path", path, "size", size, "scaled", im.Scaled)
	return c.Status(fiber.StatusCreated).JSON(imageAnswer{
		SessionID: up.session, Path: path, Name: filepath.Base(path), Size: size,
		MediaType: im.MediaType, Width: im.Width, Height: im.Height, Scaled: im.Scaled, Reencoded: im.Reencoded,
		Original: imageOriginal{
			Name: up.header.Filename, Size: im.OrigSize, MediaType: im.OrigMediaType,
			Width: im.OrigWidth, Height: im.OrigHeight,
		},
		Block: im.Block(),
	})
}

func (s *server) uploadFile(c *fiber.Ctx) error {
	up, err := s.receive(c, s.MaxFileBytes, "file")
	if err != nil {
		return err
	}
	f, err := up.header.Open()
	if err != nil {
		return fmt.Errorf("open upload: %w", err)
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read upload: %w", err)
	}
	head = head[:n]
	path, size, err := save(up.dir, SafeName(up.header.Filename), io.MultiReader(bytes.NewReader(head), io.LimitReader(f, s.MaxFileBytes-int64(n))))
	if err != nil {
		return err
	}
	s.Log.InfoContext(c.UserContext(), "file uploaded", "session_id", up.session, "path", path, "size", size)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"session_id": up.session, "path": path, "name": filepath.Base(path), "size": size,
		"original_name": up.header.Filename, "media_type": http.DetectContentType(head),
	})
}

// readAll reads an uploaded part, at most limit bytes.
func readAll(h *multipart.FileHeader, limit int64) ([]byte, error) {
	f, err := h.Open()
	if err != nil {
		return nil, fmt.Errorf("open upload: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read upload: %w", err)
	}
	if int64(len(raw)) > limit {
		return nil, protocol.Errorf(protocol.CodePayloadTooLarge, "the image is larger than %d bytes", limit)
	}
	return raw, nil
}
