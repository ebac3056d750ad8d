module github.com/svc-code/svc-code/web

go 1.26
