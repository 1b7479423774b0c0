package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Bounds of a FileSet that a build spawn reads back from its image
// (BuildSpec.ReadNodeModules). The backend stops reading at them and says
// so (FileSet.Truncated); a client rejects a set past them.
const (
	// MaxFileSetBytes bounds the bytes of all files of a set.
	MaxFileSetBytes = 64 << 20
	// MaxFileSetFiles bounds the number of files of a set.
	MaxFileSetFiles = 100000
	// MaxFileSetFile bounds one file: a larger one is skipped and named in
	// FileSet.TooLarge. Generated protobuf modules that services load at
	// start are larger than 4 MiB (@google-cloud/vision 4.3.3's
	// build/protos/protos.js is 8.0 MB); unread, each failed shipped_code.
	MaxFileSetFile = 16 << 20
	// ShebangHead is how much of an executable script is read: its
	// #! line is all the scans need.
	ShebangHead = 256
)

// FileSet is a bounded, read-only copy of some of an image's files, as a
// build spawn read them host-side from the image it built: the dependency
// code the image ships (its node_modules). It holds only what the
// dependency scans read: JavaScript (.js, .cjs, .mjs), JSON, and the first
// ShebangHead bytes of executable scripts. Symlinks are not followed.
type FileSet struct {
	// Workdir is the image's working directory (its WORKDIR, "/" when it
	// has none).
	Workdir string `json:"workdir"`
	// Roots are the absolute image directories read, in the order they
	// were read: <workdir>/node_modules and each parent's node_modules,
	// then NODE_PATH's entries. A root that does not exist is left out.
	Roots []string `json:"roots,omitempty"`
	// Files are sorted by Path.
	Files []File `json:"files,omitempty"`
	// Symlinks counts the symlinks met and not followed.
	Symlinks int `json:"symlinks,omitempty"`
	// TooLarge lists the files over MaxFileSetFile, not read.
	TooLarge []string `json:"too_large,omitempty"`
	// Truncated is set when the set reached MaxFileSetBytes or
	// MaxFileSetFiles: files past the bound are missing.
	Truncated bool `json:"truncated,omitempty"`
	// Unread, when set, says why the image's files could not be read:
	// the set is empty.
	Unread string `json:"unread,omitempty"`
}

// File is one file of a FileSet.
type File struct {
	// Path is absolute in the image and clean.
	Path string `json:"path"`
	// Exec is set for an executable file; Head is then set when Data
	// holds only its first ShebangHead bytes.
	Exec bool   `json:"exec,omitempty"`
	Head bool   `json:"head,omitempty"`
	Data []byte `json:"data"`
}

// Bytes is the size of the set's file contents.
func (s *FileSet) Bytes() int64 {
	var n int64
	for _, f := range s.Files {
		n += int64(len(f.Data))
	}
	return n
}

// Validate checks what a client must not take on trust from a set: clean
// absolute paths under one of the roots, sorted and distinct, within the
// bounds.
func (s *FileSet) Validate() error {
	if len(s.Files) > MaxFileSetFiles {
		return fmt.Errorf("file set has %d files, over the bound of %d", len(s.Files), MaxFileSetFiles)
	}
	if !path.IsAbs(s.Workdir) || path.Clean(s.Workdir) != s.Workdir {
		return fmt.Errorf("file set workdir %q is not a clean absolute path", s.Workdir)
	}
	for _, r := range s.Roots {
		if !path.IsAbs(r) || path.Clean(r) != r || r == "/" {
			return fmt.Errorf("file set root %q is not a clean absolute directory", r)
		}
	}
	var total int64
	for i, f := range s.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.ContainsAny(f.Path, "\x00\\") {
			return fmt.Errorf("file set path %q is not a clean absolute path", f.Path)
		}
		if i > 0 && s.Files[i-1].Path >= f.Path {
			return fmt.Errorf("file set paths are not sorted and distinct at %q", f.Path)
		}
		under := false
		for _, r := range s.Roots {
			under = under || strings.HasPrefix(f.Path, r+"/")
		}
		if !under {
			return fmt.Errorf("file set path %q is under none of its roots", f.Path)
		}
		if len(f.Data) > MaxFileSetFile {
			return fmt.Errorf("file set file %s has %d bytes, over the bound of %d", f.Path, len(f.Data), MaxFileSetFile)
		}
		total += int64(len(f.Data))
	}
	if total > MaxFileSetBytes {
		return fmt.Errorf("file set has %d bytes, over the bound of %d", total, MaxFileSetBytes)
	}
	return nil
}

// Digest is the SHA-256 of the set's canonical encoding (workdir, roots,
// then each file's path, flags and content, and the counts of what was
// left out), "sha256:" and lowercase hex: the same files read from the same
// image give the same digest on any machine.
func (s *FileSet) Digest() string {
	h := sha256.New()
	str := func(v string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	str("codegenie-fileset-1")
	str(s.Workdir)
	roots := append([]string(nil), s.Roots...)
	str(fmt.Sprint(len(roots)))
	for _, r := range roots {
		str(r)
	}
	str(fmt.Sprint(len(s.Files)))
	for _, f := range s.Files {
		str(f.Path)
		str(fmt.Sprintf("%t %t", f.Exec, f.Head))
		str(string(f.Data))
	}
	large := append([]string(nil), s.TooLarge...)
	sort.Strings(large)
	str(fmt.Sprint(len(large)))
	for _, l := range large {
		str(l)
	}
	str(fmt.Sprintf("%d %t", s.Symlinks, s.Truncated))
	str(s.Unread)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
