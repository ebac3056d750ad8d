package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/browser"
)

// ProxyCSP is the policy of a proxied page: sandboxed like a local file,
// but its images, styles, fonts and media may come from any http(s) site
// (its own, through the <base> the proxy adds). Scripts, forms, frames and
// connections stay refused.
const ProxyCSP = "sandbox; default-src 'none'; img-src http: https: data:; style-src http: https: 'unsafe-inline'; " +
	"font-src http: https: data:; media-src http: https:; frame-ancestors 'self'; base-uri http: https:; form-action 'none'"

// htmlExts are rendered as HTML by /view and /api/browser/render.
var htmlExts = map[string]bool{".html": true, ".htm": true, ".xhtml": true}

func isHTML(name string) bool { return htmlExts[strings.ToLower(filepath.Ext(name))] }

var viewPage = template.Must(template.New("view").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Name}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fff}
header{padding:6px 12px;background:#f3f3f3;border-bottom:1px solid #ddd;display:flex;gap:12px;align-items:baseline}
header .path{font-family:ui-monospace,monospace;overflow-wrap:anywhere;flex:1}
main{padding:12px}
pre{margin:0;font:13px/1.45 ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere;tab-size:4}
img,video,audio{max-width:100%}
ul{list-style:none;padding:0;margin:0;font-family:ui-monospace,monospace}
li{padding:2px 0}
.note{color:#666}
</style></head>
<body><header><span class="path">{{.Path}}</span>
{{if .Parent}}<a href="{{.Parent}}">up</a>{{end}}
{{if .Raw}}<a href="{{.Raw}}">raw</a> <a href="{{.Download}}">download</a>{{end}}
</header><main>
{{- if .Entries}}<ul>{{range .Entries}}<li><a href="{{.Href}}">{{.Name}}</a></li>{{end}}</ul>
{{- else if .IsDir}}<p class="note">empty directory</p>
{{- else if .Image}}<img src="{{.Image}}" alt="{{.Name}}">
{{- else if .Media}}<video controls src="{{.Media}}"></video>
{{- else if .Text}}<pre>{{.TextContent}}</pre>
{{- else}}<p class="note">{{.Note}}</p>{{end}}
</main></body></html>
`))

type viewLink struct {
	Name string
	Href string
}

type viewData struct {
	Name, Path            string
	Parent, Raw, Download string
	IsDir                 bool
	Entries               []viewLink
	Image                 template.URL // a data: URL
	Media                 string
	Text                  bool
	TextContent           string
	Note                  string
}

func viewHref(p string) string     { return "/view?path=" + url.QueryEscape(p) }
func rawHref(p string) string      { return "/api/file-raw?path=" + url.QueryEscape(p) }
func downloadHref(p string) string { return rawHref(p) + "&download=1" }

// view renders a file or directory for the browser: a directory as a list
// of links, an image inline, text as escaped HTML, an HTML file as itself
// (sandboxed), anything else as a note with a download link.
func (s *server) view(c *fiber.Ctx) error {
	shown, resolved, err := s.resolve(c.UserContext(), query(c, "path"))
	if err != nil {
		return err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return pathError(err, shown)
	}
	d := viewData{Name: filepath.Base(shown), Path: shown}
	if parent := filepath.Dir(shown); parent != shown {
		if _, err := s.Roots.Resolve(c.UserContext(), parent); err == nil {
			d.Parent = viewHref(parent)
		}
	}
	if fi.IsDir() {
		if err := s.viewDir(resolved, shown, &d); err != nil {
			return err
		}
		return s.sendView(c, d)
	}
	d.Raw, d.Download = rawHref(shown), downloadHref(shown)
	if isHTML(resolved) {
		return s.sendHTMLFile(c, resolved, shown)
	}
	f, fi, err := s.openRegular(c.UserContext(), resolved, shown)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", resolved, err)
	}
	ct := contentType(resolved, head[:n])
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case fi.Size() > MaxTextBytes && !strings.HasPrefix(mt, "video/") && !strings.HasPrefix(mt, "audio/"):
		d.Note = fmt.Sprintf("%d bytes (%s): too large to show here; use the raw or download link", fi.Size(), mt)
	case strings.HasPrefix(mt, "image/"):
		data, err := io.ReadAll(io.LimitReader(f, MaxTextBytes))
		if err != nil {
			return fmt.Errorf("read %s: %w", resolved, err)
		}
		d.Image = template.URL("data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data)) //nolint:gosec // a data: URL of an image, shown by <img> (no script runs in an image) under the sandbox CSP
	case strings.HasPrefix(mt, "video/"), strings.HasPrefix(mt, "audio/"):
		d.Media = d.Raw
	default:
		data, err := io.ReadAll(io.LimitReader(f, MaxTextBytes))
		if err != nil {
			return fmt.Errorf("read %s: %w", resolved, err)
		}
		if IsBinary(data) {
			d.Note = fmt.Sprintf("binary file, %d bytes (%s): use the raw or download link", fi.Size(), mt)
			break
		}
		d.Text, d.TextContent = true, string(data)
		if len(data) == 0 {
			d.Text, d.Note = false, "empty file"
		}
	}
	return s.sendView(c, d)
}

func (s *server) viewDir(resolved, shown string, d *viewData) error {
	d.IsDir = true
	des, err := os.ReadDir(resolved)
	if err != nil {
		return pathError(err, shown)
	}
	for i, de := range des {
		if i == MaxEntries {
			break
		}
		name := de.Name()
		if de.IsDir() {
			name += "/"
		}
		d.Entries = append(d.Entries, viewLink{Name: name, Href: viewHref(filepath.Join(shown, de.Name()))})
	}
	return nil
}

func (s *server) sendView(c *fiber.Ctx, d viewData) error {
	var buf bytes.Buffer
	if err := viewPage.Execute(&buf, d); err != nil {
		return fmt.Errorf("render view: %w", err)
	}
	setSandboxHeaders(c, SandboxCSP)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(buf.Bytes())
}

// sendHTMLFile serves a local HTML file as a page, sandboxed.
func (s *server) sendHTMLFile(c *fiber.Ctx, resolved, shown string) error {
	f, fi, err := s.openRegular(c.UserContext(), resolved, shown)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.Size() > MaxTextBytes {
		return protocol.Errorf(protocol.CodePayloadTooLarge, "%s is %d bytes, over the %d-byte limit of rendered pages", shown, fi.Size(), MaxTextBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTextBytes))
	if err != nil {
		return fmt.Errorf("read %s: %w", resolved, err)
	}
	setSandboxHeaders(c, SandboxCSP)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTML)
	return c.Send(browser.WithPolicy(data, SandboxCSP))
}

// render serves a local HTML file, sandboxed.
func (s *server) render(c *fiber.Ctx) error {
	shown, resolved, err := s.resolve(c.UserContext(), query(c, "path"))
	if err != nil {
		return err
	}
	if !isHTML(resolved) {
		if _, err := os.Stat(resolved); err != nil {
			return pathError(err, shown)
		}
		return &protocol.Error{Code: protocol.CodeUnsupportedMedia, Message: shown + " is not an HTML file (.html, .htm, .xhtml): view it with /view"}
	}
	return s.sendHTMLFile(c, resolved, shown)
}

// proxy fetches a public page and serves it sandboxed.
func (s *server) proxy(c *fiber.Ctx) error {
	raw := query(c, "url")
	if raw == "" {
		return badRequest("the url parameter is required (an http or https URL)")
	}
	page, err := s.Fetcher.Fetch(c.UserContext(), raw)
	if err != nil {
		return proxyError(err)
	}
	body := page.Body
	mt, _, _ := mime.ParseMediaType(page.ContentType)
	setSandboxHeaders(c, ProxyCSP)
	switch {
	case mt == "text/html":
		body = browser.WithPolicy(browser.WithBase(body, page.URL), ProxyCSP)
	case isActive(mt):
		// Another type a browser runs script in (SVG, XML): saved, never
		// rendered with our origin.
		c.Set(fiber.HeaderContentDisposition, "attachment")
	}
	c.Set(fiber.HeaderContentType, page.ContentType)
	c.Set("X-Proxy-Status", fmt.Sprint(page.Status))
	c.Set("X-Proxy-Url", page.URL.String())
	return c.Send(body)
}

func proxyError(err error) error {
	var blocked *browser.BlockedError
	switch {
	case errors.As(err, &blocked):
		return protocol.Errorf(protocol.CodeForbidden, "%s", blocked.Error())
	case errors.Is(err, browser.ErrBadURL):
		return badRequest("%s", err.Error())
	case errors.Is(err, browser.ErrTooLarge):
		return protocol.Errorf(protocol.CodePayloadTooLarge, "%s", err.Error())
	case errors.Is(err, browser.ErrTooManyRedirects):
		return protocol.Errorf(protocol.CodeUnavailable, "%s", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return &protocol.Error{Code: protocol.CodeTimeout, Status: fiber.StatusGatewayTimeout, Message: "the site did not answer in time"}
	}
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: "could not fetch the page: " + err.Error()}
}
