package gatecontrol

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Prefixes of a workspace digest, saying how much of the workspace it covers.
const (
	// digestFull: every entry, and the content of every regular file.
	digestFull = "sha256:"
	// digestMeta: every entry, but some regular files by size and mtime
	// only, because the content budget ran out.
	digestMeta = "sha256-meta:"
	// digestPartial: only the first entries in walk order; the entry
	// bound cut the walk.
	digestPartial = "sha256-partial:"
)

// digestDomain starts the hashed stream, so that the digest cannot be
// confused with a hash of anything else.
const digestDomain = "codegenie workspace digest v1\x00"

// errNotDirectory reports a workspace that is not a directory.
var errNotDirectory = errors.New("workspace is not a directory")

// workspaceDigest hashes the tree under dir as the package documentation
// describes: the entries in lexical walk order, each with its kind, path
// relative to dir, permission bits and, for a regular file, its size and
// content while maxBytes of content last (then its mtime instead), for a
// symlink its target. It stops after maxFiles entries. It follows no
// symlink and opens no file that is not regular.
func workspaceDigest(ctx context.Context, dir string, maxBytes int64, maxFiles int) (string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: %w", dir, errNotDirectory)
	}
	d := digester{h: sha256.New(), budget: maxBytes, prefix: digestFull}
	d.h.Write([]byte(digestDomain))
	n := 0
	err = filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if n >= maxFiles {
			d.prefix = digestPartial
			return filepath.SkipAll
		}
		n++
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		return d.entry(path, filepath.ToSlash(rel), de)
	})
	if err != nil {
		return "", fmt.Errorf("digesting workspace: %w", err)
	}
	return d.prefix + hex.EncodeToString(d.h.Sum(nil)), nil
}

type digester struct {
	h      hash.Hash
	budget int64
	prefix string
	num    [binary.MaxVarintLen64]byte
}

func (d *digester) uint(v uint64) {
	d.h.Write(d.num[:binary.PutUvarint(d.num[:], v)])
}

func (d *digester) str(s string) {
	d.uint(uint64(len(s)))
	io.WriteString(d.h, s)
}

func (d *digester) entry(path, rel string, de fs.DirEntry) error {
	fi, err := de.Info()
	if err != nil {
		return err
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		d.h.Write([]byte{'d'})
		d.str(rel)
		d.uint(uint64(mode.Perm()))
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		d.h.Write([]byte{'l'})
		d.str(rel)
		d.str(target)
	case mode.IsRegular():
		d.h.Write([]byte{'f'})
		d.str(rel)
		d.uint(uint64(mode.Perm()))
		return d.file(path, fi)
	default: // fifo, socket, device: never opened
		d.h.Write([]byte{'o'})
		d.str(rel)
		d.uint(uint64(mode))
	}
	return nil
}

// file hashes a regular file's content, or its size and mtime once the
// content budget is spent. The file is opened without following a symlink
// and without blocking, and must still be regular, so a file swapped for a
// fifo or a link after the walk saw it cannot hang or redirect the digest.
func (d *digester) file(path string, fi fs.FileInfo) error {
	if fi.Size() > d.budget {
		d.prefix = digestMeta
		d.h.Write([]byte{'m'})
		d.uint(uint64(fi.Size()))
		d.uint(uint64(fi.ModTime().UnixNano()))
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return err
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("%s changed while it was read", path)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, io.LimitReader(f, fi.Size()))
	if err != nil {
		return err
	}
	d.budget -= n
	d.h.Write([]byte{'c'})
	d.uint(uint64(n))
	d.h.Write(sum.Sum(nil))
	return nil
}
