module github.com/svc-code/svc-code/deploy/e2e

go 1.26.0
