package files

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
)

// SandboxCSP is the Content-Security-Policy of everything the browser may
// render from a local file (/api/file-raw, /view, /api/browser/render): the
// document gets an opaque origin (sandbox without allow-same-origin), no
// script, form, plugin, frame or connection of any kind, and only inline
// styles, images and media of its own origin or data: URLs.
const SandboxCSP = "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self' data:; " +
	"style-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"

// setSandboxHeaders marks an answer as untrusted content.
func setSandboxHeaders(c *fiber.Ctx, csp string) {
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
	c.Set("Cross-Origin-Resource-Policy", "same-origin")
	c.Set(fiber.HeaderCacheControl, "private, no-cache")
}

// contentType picks the media type by extension, else by sniffing head.
func contentType(name string, head []byte) string {
	if t := mime.TypeByExtension(strings.ToLower(filepath.Ext(name))); t != "" {
		return t
	}
	return http.DetectContentType(head)
}

// isActive reports whether a browser may run script in a document of
// media type mt.
func isActive(mt string) bool {
	switch mt {
	case "text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml", "text/xsl", "application/xslt+xml":
		return true
	}
	return strings.HasSuffix(mt, "+xml")
}

// mediaType is the media type of the answer's Content-Type.
func mediaType(c *fiber.Ctx) string {
	mt, _, _ := mime.ParseMediaType(string(c.Response().Header.ContentType()))
	return mt
}

// fileStream is a section of an open file that closes the file once
// fasthttp has sent it.
type fileStream struct {
	*io.SectionReader
	f *os.File
}

func (s fileStream) Close() error { return s.f.Close() }

func (s *server) rawFile(c *fiber.Ctx) error {
	download, err := queryBool(c, "download", false)
	if err != nil {
		return err
	}
	shown, resolved, err := s.resolve(c.UserContext(), query(c, "path"))
	if err != nil {
		return err
	}
	f, fi, err := s.openRegular(c.UserContext(), resolved, shown)
	if err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			_ = f.Close() // read-only: nothing to lose
		}
	}()
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", resolved, err)
	}
	size := fi.Size()
	etag := fmt.Sprintf(`"%x-%x"`, size, fi.ModTime().UnixNano())
	setSandboxHeaders(c, SandboxCSP)
	c.Set(fiber.HeaderContentType, contentType(resolved, head[:n]))
	c.Set(fiber.HeaderAcceptRanges, "bytes")
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderLastModified, fi.ModTime().UTC().Format(http.TimeFormat))
	disposition := "inline"
	if download || isActive(mediaType(c)) {
		// Active content (HTML, SVG, XML) is never rendered from here, even
		// sandboxed: /view and /api/browser/render show it.
		disposition = "attachment"
	}
	c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType(disposition, map[string]string{"filename": filepath.Base(shown)}))

	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && match == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	start, length := int64(0), size
	if rng := c.Get(fiber.HeaderRange); rng != "" && (c.Get(fiber.HeaderIfRange) == "" || c.Get(fiber.HeaderIfRange) == etag) {
		st, ln, ok, err := parseRange(rng, size)
		if err != nil {
			c.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes */%d", size))
			return &protocol.Error{Code: protocol.CodeBadRequest, Status: fiber.StatusRequestedRangeNotSatisfiable, Message: err.Error()}
		}
		if ok {
			start, length = st, ln
			c.Status(fiber.StatusPartialContent)
			c.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes %d-%d/%d", st, st+ln-1, size))
		}
	}
	keep = true
	c.Context().SetBodyStream(fileStream{io.NewSectionReader(f, start, length), f}, int(length))
	return nil
}

var errUnsatisfiable = errors.New("range not satisfiable")

// parseRange reads a Range header for a body of size bytes. One range is
// served (start, length, true); a header it does not handle (another unit,
// several ranges, bad syntax) is ignored (false), as RFC 9110 allows; a
// range entirely past the end is an error (416).
func parseRange(h string, size int64) (start, length int64, ok bool, err error) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, nil
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, nil
	}
	if first == "" { // suffix: the last N bytes
		n, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || n < 0 {
			return 0, 0, false, nil
		}
		if n == 0 || size == 0 {
			return 0, 0, false, errUnsatisfiable
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	s, perr := strconv.ParseInt(first, 10, 64)
	if perr != nil || s < 0 {
		return 0, 0, false, nil
	}
	if s >= size {
		return 0, 0, false, errUnsatisfiable
	}
	e := size - 1
	if last != "" {
		e, perr = strconv.ParseInt(last, 10, 64)
		if perr != nil || e < s {
			return 0, 0, false, nil
		}
		e = min(e, size-1)
	}
	return s, e - s + 1, true, nil
}
