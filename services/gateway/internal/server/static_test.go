package server

import (
	"io/fs"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/web"
)

// The gzip cache keys must not point into fasthttp's reused request buffers:
// a later request would rewrite a stored key under the map (pitfalls.md).
func TestStaticGzipCacheKeysSurviveLaterRequests(t *testing.T) {
	gzipCache.Range(func(k, _ any) bool { gzipCache.Delete(k); return true })
	entries, err := fs.ReadDir(web.App, "dist/assets")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no built assets: %v", err)
	}
	var asset string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			asset = "/assets/" + e.Name()
			break
		}
	}
	app := fiber.New()
	s := &Server{}
	app.Use(func(c *fiber.Ctx) error { return s.static(c) })
	get := func(path string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if st := get(asset); st != 200 {
		t.Fatalf("GET %s = %d", asset, st)
	}
	// Other paths of the same length overwrite the buffer the first path was in.
	for i := 0; i < 50; i++ {
		get("/assets/" + strings.Repeat(string(rune('a'+i%26)), len(asset)-len("/assets/")))
	}
	gzipCache.Range(func(k, _ any) bool {
		name := k.(string)
		if _, err := fs.Stat(web.App, "dist/"+name); err != nil {
			t.Errorf("gzip cache key %q is not an asset: the key changed after it was stored", name)
		}
		return true
	})
	if st := get(asset); st != 200 {
		t.Fatalf("GET %s again = %d", asset, st)
	}
}
