package server

import (
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"
)

func mediaType(c *fiber.Ctx) string {
	mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

func isJSON(c *fiber.Ctx) bool { return mediaType(c) == fiber.MIMEApplicationJSON }

func isForm(c *fiber.Ctx) bool {
	mt := mediaType(c)
	return mt == fiber.MIMEApplicationForm || mt == fiber.MIMEMultipartForm
}
