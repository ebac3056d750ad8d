package uploads

import (
	"bytes"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// TestConcurrentBombsBoundedMemory: small uploads that decode to large
// images (a 16-bit 1400×1400 PNG of one colour is a few KB and 15 MB
// decoded) sent at once are decoded a few at a time, so the memory they
// take does not grow with the number of requests. Not parallel: it
// measures the process' heap.
func TestConcurrentBombsBoundedMemory(t *testing.T) {
	const n, side = 8, 1400
	img := image.NewNRGBA64(image.Rect(0, 0, side, side))
	for i := range img.Pix { // one opaque colour
		img.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	bomb := buf.Bytes()
	log := slog.New(slog.DiscardHandler)
	app := svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 32 << 20, Log: log})
	e := &env{app: app, dataHome: t.TempDir()}
	Register(app, Deps{
		DataHome: e.dataHome, Sessions: knownSessions{"S1": true}, Log: log,
		// Kept as uploaded: only the validating decode costs memory.
		Images: ImageLimits{MaxSide: 4000, MaxBase64: 10 << 20, MaxPixels: 1e8},
	})

	// Collect often, so that the heap holds what is live, not garbage.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			got := e.upload(t, "/api/upload-image?session=S1", part{"file", "bomb.png", "image/png", bomb})
			if got.status != http.StatusCreated {
				t.Errorf("upload: %d %s", got.status, got.raw)
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled
	grew := int64(peak.Load()) - int64(base)
	decoded := int64(side * side * 8)
	t.Logf("%d uploads of %d KB, %d MB decoded each: heap grew at most %d MB", n, len(bomb)>>10, decoded>>20, grew>>20)
	if grew > 5*decoded { // all 8 at once: 8 decoded images and more
		t.Errorf("heap grew by %d MB for %d uploads of %d MB decoded each: decodes are not bounded", grew>>20, n, decoded>>20)
	}
}
