// Package web holds the browser-facing assets the gateway serves: the login
// page and its stylesheet, the web app manifest and the instance icons
// (public/), and the browser app built from src/ by `make ui` (dist/: the
// page, its hashed assets and the service worker). They are embedded in the
// gateway binary, so a deployment is one file per service, and a machine
// with Go alone serves the whole UI (dist/ is committed).
package web

import "embed"

// Public holds the files served at their path below public/ (manifest.json,
// static/..., instance-icons/...).
//
//go:embed public
var Public embed.FS

// App holds the built browser app: dist/index.html (served at "/" and the
// app's own paths), dist/assets/... and dist/sw.js.
//
//go:embed dist
var App embed.FS

// Templates holds the server-rendered pages (login.html).
//
//go:embed templates
var Templates embed.FS
