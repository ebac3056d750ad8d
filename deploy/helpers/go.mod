module github.com/svc-code/svc-code/deploy/helpers

go 1.26
