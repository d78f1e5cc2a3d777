// Package static embeds the stylesheets, scripts and icon the pages load:
// our own files, and dist/, which 'make assets' fills from the npm packages.
//
// Each file is also known under a name carrying a hash of its content
// (app.css as app.3f2a1c9b0d.css): pages link those names (URL), which
// browsers may keep for a year since a change makes a new name. The table
// of files, with a gzip copy of each that compression makes smaller, is
// built once, from the embedded files alone.
package static

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"
)

// FS is the embedded files, served under /static.
//
//go:embed *.css *.js *.svg dist
var FS embed.FS

// File is one embedded file, ready to serve.
type File struct {
	// Name is its path in FS ("dist/htmx.min.js"); HashedName carries the
	// hash before the extension ("dist/htmx.min.3f2a1c9b0d.js").
	Name, HashedName string
	// Hash is the first 10 hex digits of the SHA-256 of Body.
	Hash        string
	ContentType string
	Body        []byte
	// Gzip is Body gzip-compressed, nil when that would not save much (a
	// small file, an already-compressed type).
	Gzip []byte
}

// Files are the embedded files by both their names.
type Files struct {
	byName, byHashed map[string]*File
}

// Lookup finds a file by its path under /static: its hashed name (hashed
// is then true) or its plain one. A name with a hash that is not the
// file's current one is nil.
func (fs *Files) Lookup(name string) (f *File, hashed bool) {
	if f, ok := fs.byHashed[name]; ok {
		return f, true
	}
	return fs.byName[name], false
}

// URL is the path a page links a file by: /static/ and its hashed name;
// the plain name when there is no such file.
func (fs *Files) URL(name string) string {
	if f, ok := fs.byName[name]; ok {
		return "/static/" + f.HashedName
	}
	return "/static/" + name
}

// All are the embedded files, read and hashed on first use.
var All = sync.OnceValue(func() *Files {
	files, err := load(FS)
	if err != nil {
		// The files are in the binary: this cannot fail but for a bug.
		panic(err)
	}
	return files
})

// URL is the path a page links an embedded file by (Files.URL).
func URL(name string) string { return All().URL(name) }

// gzipMinSize is the smallest file worth compressing: below it, a second
// copy to keep and to choose between saves next to nothing.
const gzipMinSize = 1024

func load(fsys fs.FS) (*Files, error) {
	files := &Files{byName: map[string]*File{}, byHashed: map[string]*File{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])[:10]
		ext := path.Ext(name)
		f := &File{
			Name:        name,
			HashedName:  strings.TrimSuffix(name, ext) + "." + hash + ext,
			Hash:        hash,
			ContentType: mime.TypeByExtension(ext),
			Body:        body,
		}
		if f.ContentType == "" {
			f.ContentType = "application/octet-stream"
		}
		if len(body) >= gzipMinSize && compressible(f.ContentType) {
			gz, err := gzipped(body)
			if err != nil {
				return fmt.Errorf("compress %s: %w", name, err)
			}
			// Worth it only when it saves a tenth at least.
			if len(gz) < len(body)*9/10 {
				f.Gzip = gz
			}
		}
		files.byName[name] = f
		files.byHashed[f.HashedName] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded static files: %w", err)
	}
	return files, nil
}

// compressible reports whether gzip can shrink files of a content type:
// text, scripts, SVG; not images or fonts, which are compressed already.
func compressible(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return strings.HasPrefix(mt, "text/") || mt == "application/javascript" || mt == "application/json" || mt == "image/svg+xml"
}

func gzipped(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
