// Package web holds the browser-facing assets the gateway serves: the login
// page and its stylesheet, the landing page, the web app manifest, the
// service worker and the instance icons. They are embedded in the gateway
// binary, so a deployment is one file per service.
package web

import "embed"

// Public holds the files served at their path below public/ (sw.js,
// manifest.json, static/..., instance-icons/..., index.html).
//
//go:embed public
var Public embed.FS

// Templates holds the server-rendered pages (login.html).
//
//go:embed templates
var Templates embed.FS
