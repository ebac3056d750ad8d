package app

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// errStorageUnavailable is the answer of a request that failed because
// PostgreSQL could not be reached: 503, so that a client tells an outage
// (try again in a moment) from a fault.
var errStorageUnavailable = &protocol.Error{
	Code:    protocol.CodeStorageUnavailable,
	Message: "storage unavailable: the database cannot be reached; try again in a moment",
}

// storageUnavailable turns the error of a handler that found PostgreSQL
// unreachable (store.Unavailable) into errStorageUnavailable, logged here
// as a warning (the error handler logs internal errors only).
func storageUnavailable(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := c.Next()
		if err != nil && store.Unavailable(err) {
			log.Warn("request failed: postgres unreachable", "method", c.Method(), "path", c.Path(),
				"request_id", c.Get(protocol.HeaderRequestID), "err", err)
			return errStorageUnavailable
		}
		return err
	}
}
