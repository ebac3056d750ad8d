package files

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/safename"
)

// MaxUploadBytes bounds a file uploaded by POST /api/file/upload (within the
// service's BODY_LIMIT_MB, which bounds the whole request).
const MaxUploadBytes = 25 << 20

// uploadField is the multipart field that carries the file.
const uploadField = "file"

// maxUploadName bounds an uploaded file's stored name, in bytes.
const maxUploadName = 120

// uploadFile is POST /api/file/upload?path=<directory>: the multipart file
// is created in that directory under its cleaned name, any bytes, never
// replacing a file that exists, through the same checked, atomic write as
// POST /api/file/write.
func (s *server) uploadFile(c *fiber.Ctx) error {
	mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != fiber.MIMEMultipartForm {
		return protocol.Errorf(protocol.CodeUnsupportedMedia, "send multipart/form-data with the file in the field %q", uploadField)
	}
	dir := strings.Clone(c.Query("path"))
	if dir == "" {
		return badRequest("the query parameter path is required (the directory to upload into)")
	}
	form, err := c.MultipartForm()
	if err != nil {
		return badRequest("malformed multipart body: %v", err)
	}
	parts := form.File[uploadField]
	switch {
	case len(parts) == 0:
		return badRequest("no file: send it in the multipart field %q", uploadField)
	case len(parts) > 1:
		return badRequest("one file per request: the field %q came %d times", uploadField, len(parts))
	case parts[0].Size > MaxUploadBytes:
		return protocol.Errorf(protocol.CodePayloadTooLarge, "the file is %d bytes: at most %d", parts[0].Size, MaxUploadBytes)
	}
	name := uploadName(parts[0].Filename)
	f, err := parts[0].Open()
	if err != nil {
		return fmt.Errorf("open upload: %w", err)
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, MaxUploadBytes+1))
	if err != nil {
		return fmt.Errorf("read upload: %w", err)
	}
	if len(content) > MaxUploadBytes {
		return protocol.Errorf(protocol.CodePayloadTooLarge, "the file is larger than %d bytes", MaxUploadBytes)
	}
	create := "" // create only: an upload never replaces a file
	w, err := s.write(c.UserContext(), path.Join(dir, name), content, &create, false)
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe) && pe.Code == protocol.CodeConflict:
		return protocol.Errorf(protocol.CodeConflict, "%s already holds a file named %s: an upload never replaces one", dir, name)
	case errors.As(err, &pe) && pe.Code == protocol.CodeNotFound:
		return protocol.Errorf(protocol.CodeNotFound, "the directory %s does not exist", dir)
	case err != nil:
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(w)
}

// uploadName turns an uploaded file's name into one safe to create: its last
// path element only (either slash), letters, digits, space and . _ - + ( ) ,
// kept and anything else replaced by '_', no leading or trailing dots or
// spaces, at most maxUploadName bytes (the extension kept); "file" when
// nothing is left. (chat's uploads clean names the same way.)
func uploadName(name string) string {
	return safename.Clean(name, maxUploadName)
}
