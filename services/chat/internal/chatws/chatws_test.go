package chatws

import (
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// A client whose queue is full is closed with CloseTooSlow at the next
// frame; frames after that are dropped without blocking.
func TestConnOverflowClosesTooSlow(t *testing.T) {
	c := &conn{queue: make(chan room.Frame, 2), done: make(chan struct{})}
	c.Send(room.ErrorFrame("one"))
	c.Send(room.ErrorFrame("two"))
	select {
	case <-c.done:
		t.Fatal("closed before the queue overflowed")
	default:
	}
	c.Send(room.ErrorFrame("three"))
	select {
	case <-c.done:
	default:
		t.Fatal("not closed after the overflow")
	}
	if c.code != CloseTooSlow {
		t.Errorf("close code %d, want %d", c.code, CloseTooSlow)
	}
	c.Send(room.ErrorFrame("four")) // must not block
	if len(c.queue) != 2 {
		t.Errorf("queue holds %d frames, want 2", len(c.queue))
	}
}

func TestCheckImages(t *testing.T) {
	ok := room.Image{Type: "image"}
	ok.Source.Type, ok.Source.MediaType, ok.Source.Data = "base64", "image/png", "aGVsbG8="
	if err := checkImages([]room.Image{ok}); err != nil {
		t.Errorf("valid image: %v", err)
	}
	for name, mod := range map[string]func(*room.Image){
		"not base64":  func(im *room.Image) { im.Source.Data = "not base64!" },
		"empty data":  func(im *room.Image) { im.Source.Data = "" },
		"media type":  func(im *room.Image) { im.Source.MediaType = "text/plain" },
		"source type": func(im *room.Image) { im.Source.Type = "url" },
		"block type":  func(im *room.Image) { im.Type = "text" },
	} {
		im := ok
		mod(&im)
		if err := checkImages([]room.Image{ok, im}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
