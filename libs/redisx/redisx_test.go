package redisx

import (
	"context"
	"os"
	"testing"
)

func TestKey(t *testing.T) {
	if got := (Keys{Prefix: "svc:"}).Key("auth", "epochs"); got != "svc:auth:epochs" {
		t.Errorf("Key = %q", got)
	}
}

func TestConnect(t *testing.T) {
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	c, err := Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("Redis must be reachable for the tests (start it as README says): %v", err)
	}
	defer c.Close()
	if _, err := Connect(context.Background(), "redis://127.0.0.1:1/0"); err == nil {
		t.Error("Connect to a closed port succeeded")
	}
	if _, err := Connect(context.Background(), "http://nope"); err == nil {
		t.Error("Connect with a bad URL succeeded")
	}
}
