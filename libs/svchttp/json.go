package svchttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
)

// DecodeJSON parses a request's JSON body strictly into v (a pointer to a
// struct): the Content-Type must be application/json (parameters such as
// charset are allowed), else unsupported_media_type (415); the body must be
// exactly one JSON object with no unknown fields and nothing after it, else
// bad_request (400). Every backend route with a JSON body reads it this way.
func DecodeJSON(c *fiber.Ctx, v any) error {
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return protocol.Errorf(protocol.CodeUnsupportedMedia, "send Content-Type: application/json")
	}
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 || body[0] != '{' {
		return protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: want one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return protocol.Errorf(protocol.CodeBadRequest, "malformed JSON body: trailing data after the object")
	}
	return nil
}
