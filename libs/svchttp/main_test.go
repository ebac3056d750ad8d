package svchttp_test

import (
	"testing"

	"github.com/svc-code/svc-code/libs/svchttp/svchttptest"
)

func TestMain(m *testing.M) { svchttptest.VerifyTestMain(m) }
