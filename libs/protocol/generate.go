package protocol

// The TypeScript types of this package, for the browser UI, are generated
// into web/src/protocol/types.gen.ts by tygo, pinned in the tools/tygo
// module (kept out of go.work: protocol and the services do not depend on
// it). TestGeneratedTypeScript fails when that file is stale.
//
// GOWORK=off: `go tool -modfile` needs module mode; the package is then
// loaded from libs/go.mod, which needs nothing else.
//go:generate env GOWORK=off go tool -modfile=../../tools/tygo/go.mod tygo generate --config tygo.yaml
