// The pinned tygo, the generator of web/src/protocol/types.gen.ts from
// libs/protocol (see libs/protocol/generate.go). A module of its own, left
// out of go.work, so that neither protocol nor the services depend on it.
module github.com/svc-code/svc-code/tools/tygo

go 1.26

tool github.com/gzuidhof/tygo

require (
	github.com/fatih/structtag v1.2.0 // indirect
	github.com/gzuidhof/tygo v0.2.18 // indirect
	github.com/inconshreveable/mousetrap v1.0.0 // indirect
	github.com/spf13/cobra v1.3.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	golang.org/x/mod v0.5.1 // indirect
	golang.org/x/sys v0.0.0-20211205182925-97ca703d548d // indirect
	golang.org/x/tools v0.1.9 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
