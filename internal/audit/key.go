package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrInsecureKey reports a signing key file whose mode grants group or
// others any access.
var ErrInsecureKey = errors.New("audit signing key is accessible by group or others")

// maxKeyBytes bounds what a key file may hold.
const maxKeyBytes = 64 << 10

// PublicKeyPath is where LoadOrCreateKey writes the public key of the key
// at path: beside it, with ".pub" appended.
func PublicKeyPath(path string) string { return path + ".pub" }

// LoadOrCreateKey returns the ed25519 signing key in the PEM (PKCS #8)
// file at path. When the file does not exist it creates one, mode 0600,
// with a new key; two processes creating it at once end up with the same
// key. It refuses, with ErrInsecureKey, a file that group or others can
// access. Either way it writes the public key, as a PEM (PKIX) file, to
// PublicKeyPath(path), mode 0644, when that file is missing or differs.
func LoadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, gerr := ed25519.GenerateKey(rand.Reader)
		if gerr != nil {
			return nil, fmt.Errorf("generating audit signing key: %w", gerr)
		}
		der, merr := x509.MarshalPKCS8PrivateKey(priv)
		if merr != nil {
			return nil, fmt.Errorf("encoding audit signing key: %w", merr)
		}
		werr := writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600, false)
		if werr != nil && !errors.Is(werr, fs.ErrExist) {
			return nil, werr
		}
		// Ours, or the one another process linked first.
		key, err = readKey(path)
	}
	if err != nil {
		return nil, err
	}
	pub, err := EncodePublicKey(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(PublicKeyPath(path)); err != nil || string(old) != string(pub) {
		if err := writeFile(PublicKeyPath(path), pub, 0o644, true); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// LoadKey returns the signing key in the file at path, as LoadOrCreateKey
// does, but never creates one.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	return readKey(path)
}

func readKey(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit signing key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading audit signing key: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("reading audit signing key %s (mode %v): %w", path, fi.Mode(), ErrInsecureKey)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading audit signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" || len(b) > maxKeyBytes {
		return nil, fmt.Errorf("decoding audit signing key %s: not a PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("decoding audit signing key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("decoding audit signing key %s: a %T, not an ed25519 key", path, k)
	}
	return key, nil
}

// EncodePublicKey returns pub as a PEM PUBLIC KEY (PKIX) block.
func EncodePublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding audit public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ReadPublicKey reads an ed25519 public key from a PEM PUBLIC KEY file, as
// LoadOrCreateKey writes it.
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit public key: %w", err)
	}
	return ParsePublicKey(b)
}

// ParsePublicKey decodes an ed25519 public key from a PEM PUBLIC KEY block.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("decoding audit public key: not a PEM PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("decoding audit public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("decoding audit public key: a %T, not an ed25519 key", k)
	}
	return pub, nil
}

// writeFile writes b to a temporary file beside path with mode perm,
// fsyncs it, and renames it over path (replace) or links it to path,
// failing with an error matching fs.ErrExist when path exists (!replace).
// It fsyncs the directory after.
func writeFile(path string, b []byte, perm os.FileMode, replace bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		tmp.Close()
		if err != nil || !replace {
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing the directory of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the directory of %s: %w", path, err)
	}
	return nil
}
