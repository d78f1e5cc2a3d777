// Package static embeds the stylesheets and scripts the pages load: our own
// files, and dist/, which 'make assets' fills from the npm packages.
package static

import "embed"

// FS is served under /static.
//
//go:embed *.css *.js dist
var FS embed.FS
