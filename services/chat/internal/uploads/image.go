package uploads

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers the GIF decoder with image.Decode
	"image/jpeg"
	"image/png"
	"net/http"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // registers the WebP decoder with image.Decode
)

// ImageLimits are what the models accept, and what the server is willing
// to decode.
type ImageLimits struct {
	// MaxSide is the longest side an image may have (pixels).
	MaxSide int
	// MaxBase64 is the largest base64 encoding of an image (bytes).
	MaxBase64 int
	// MaxPixels bounds width×height of an image that is decoded at all.
	MaxPixels int
}

// DefaultImageLimits follow Claude's vision guidance (images whose longest side
// exceeds 1568 px are scaled down anyway; 5 MB per image through the API).
var DefaultImageLimits = ImageLimits{MaxSide: 1568, MaxBase64: 5 * 1000 * 1000, MaxPixels: 50_000_000}

// jpegQuality is used when an image is re-encoded as JPEG.
const jpegQuality = 85

// Errors of PrepareImage.
var (
	ErrNotImage  = errors.New("not a png, jpeg, gif or webp image")
	ErrBadImage  = errors.New("the image cannot be decoded")
	ErrTooLarge  = errors.New("the image has too many pixels")
	errNoFitting = errors.New("no encoding fits the size limit")
)

// imageTypes are the media types the models accept, by what
// http.DetectContentType sniffs.
var imageTypes = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
}

// Image is an image ready for a user_message.
type Image struct {
	Data          []byte
	MediaType     string
	Width, Height int
	// Scaled: scaled down to fit the limits; Reencoded: the bytes are not
	// the ones uploaded (scaled, or re-encoded to fit MaxBase64).
	Scaled, Reencoded bool
	// The upload as it came.
	OrigMediaType         string
	OrigWidth, OrigHeight int
	OrigSize              int
}

// Block is the image block of a user_message.
func (im Image) Block() map[string]any {
	return map[string]any{
		"type": "image",
		"source": map[string]any{
			"type": "base64", "media_type": im.MediaType, "data": base64.StdEncoding.EncodeToString(im.Data),
		},
	}
}

// PrepareImage checks raw is a png, jpeg, gif or webp image by its content
// (whatever the upload claimed) and makes it fit lim: an image whose
// longest side exceeds MaxSide is scaled down to it, and one whose base64
// exceeds MaxBase64 is re-encoded (JPEG, then smaller) until it fits.
// Scaled JPEGs stay JPEG; others become PNG, or JPEG when a PNG does not
// fit. An image within the limits is kept as uploaded (an animated GIF
// stays animated; one that must shrink keeps its first frame only).
func PrepareImage(raw []byte, lim ImageLimits) (Image, error) {
	sniffed := http.DetectContentType(raw)
	if _, ok := imageTypes[sniffed]; !ok {
		return Image{}, fmt.Errorf("%w (the content looks like %s)", ErrNotImage, sniffed)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return Image{}, fmt.Errorf("%w: %w", ErrBadImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > lim.MaxPixels/cfg.Height {
		return Image{}, fmt.Errorf("%w: %d×%d (at most %d pixels)", ErrTooLarge, cfg.Width, cfg.Height, lim.MaxPixels)
	}
	im := Image{
		Data: raw, MediaType: sniffed, Width: cfg.Width, Height: cfg.Height,
		OrigMediaType: sniffed, OrigWidth: cfg.Width, OrigHeight: cfg.Height, OrigSize: len(raw),
	}
	// Decoded whole even when kept: a truncated or corrupt image is refused
	// here rather than by the model's API mid-turn.
	src, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		return Image{}, fmt.Errorf("%w: %w", ErrBadImage, err)
	}
	if max(cfg.Width, cfg.Height) <= lim.MaxSide && base64.StdEncoding.EncodedLen(len(raw)) <= lim.MaxBase64 {
		return im, nil
	}
	w, h := fit(cfg.Width, cfg.Height, lim.MaxSide)
	im.Reencoded, im.Scaled = true, w != cfg.Width || h != cfg.Height
	// Shrink by a quarter each round until an encoding fits.
	for range 8 {
		data, mt, err := encode(scale(src, w, h), sniffed, lim.MaxBase64)
		if err == nil {
			im.Data, im.MediaType, im.Width, im.Height = data, mt, w, h
			return im, nil
		}
		w, h = max(w*3/4, 1), max(h*3/4, 1)
		im.Scaled = true
	}
	return Image{}, fmt.Errorf("%w: %w", ErrTooLarge, errNoFitting)
}

// fit scales w×h so that the longest side is at most side.
func fit(w, h, side int) (int, int) {
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(h*side/w, 1)
	}
	return max(w*side/h, 1), side
}

// scale resamples src to w×h (Catmull-Rom), or returns it when the size is
// already that.
func scale(src image.Image, w, h int) image.Image {
	b := src.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return src
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return dst
}

// encode writes img as JPEG when the upload was one, else as PNG, falling
// back to JPEG (on white, for transparency) when the PNG does not fit.
func encode(img image.Image, uploaded string, maxBase64 int) ([]byte, string, error) {
	fits := func(b []byte) bool { return base64.StdEncoding.EncodedLen(len(b)) <= maxBase64 }
	if uploaded != "image/jpeg" {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return nil, "", fmt.Errorf("encode png: %w", err)
		}
		if fits(buf.Bytes()) {
			return buf.Bytes(), "image/png", nil
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, onWhite(img), &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, "", fmt.Errorf("encode jpeg: %w", err)
	}
	if fits(buf.Bytes()) {
		return buf.Bytes(), "image/jpeg", nil
	}
	return nil, "", errNoFitting
}

// onWhite flattens transparency onto white, as a JPEG cannot keep it.
func onWhite(img image.Image) image.Image {
	if _, opaque := img.(*image.YCbCr); opaque {
		return img
	}
	dst := image.NewRGBA(img.Bounds())
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(dst, dst.Bounds(), img, img.Bounds().Min, draw.Over)
	return dst
}
