package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/codegenie/codegenie/internal/strictjson"
)

// ErrInsecureKeyFile reports a key file that is not a regular file private
// to its owner: its mode grants group or others any access.
var ErrInsecureKeyFile = errors.New("key file is accessible by group or others")

// maxKeyFileBytes bounds what a key file may hold.
const maxKeyFileBytes = 1 << 20

// keyFileVersion is the only version of the key file format.
const keyFileVersion = 1

// keyFile is the JSON key file. Secrets are base64.
type keyFile struct {
	Version  int       `json:"version"`
	Current  fileKey   `json:"current"`
	Previous []fileKey `json:"previous,omitempty"`
}

type fileKey struct {
	ID      string    `json:"id"`
	Secret  []byte    `json:"secret"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
}

func (kf *keyFile) ring() (*KeyRing, error) {
	if kf.Version != keyFileVersion {
		return nil, fmt.Errorf("unsupported key file version %d", kf.Version)
	}
	if !kf.Current.Expires.IsZero() {
		return nil, errors.New("current key has an expiry")
	}
	prev := make([]PreviousKey, len(kf.Previous))
	for i, p := range kf.Previous {
		prev[i] = PreviousKey{Key: Key{ID: p.ID, Secret: p.Secret}, Expires: p.Expires}
	}
	return NewKeyRing(Key{ID: kf.Current.ID, Secret: kf.Current.Secret}, prev...)
}

// LoadOrCreateKeyFile returns the key ring in the key file at path. When
// the file does not exist it creates one, with mode 0600 and a new current
// key, stamped with now. It refuses, with ErrInsecureKeyFile, a file whose
// mode grants group or others any access, and it refuses unknown fields
// and keys shorter than SecretBytes. Two processes creating the same file
// at once end up with the same keys. A nil now means time.Now.
func LoadOrCreateKeyFile(path string, now func() time.Time) (*KeyRing, error) {
	if now == nil {
		now = time.Now
	}
	kf, err := readKeyFile(path)
	if err == nil {
		return kf.ring()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	k, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("creating key file: %w", err)
	}
	kf = keyFile{Version: keyFileVersion, Current: fileKey{ID: k.ID, Secret: k.Secret, Created: now().UTC()}}
	err = writeKeyFile(path, kf, false)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it first: use its keys.
		kf, err = readKeyFile(path)
		if err != nil {
			return nil, err
		}
		return kf.ring()
	}
	if err != nil {
		return nil, err
	}
	return kf.ring()
}

// Rotate replaces the current key in the key file at path with a new one.
// The old current key stays valid for verification until now()+overlap; an
// overlap of zero ends it at once. Previous keys already expired at now are
// dropped. The file is replaced atomically (temp file, fsync, rename), and
// the new ring is returned; a running Verifier sees it only through
// SetKeyRing. Rotate does not guard against a concurrent Rotate of the
// same file by another process. A nil now means time.Now.
func Rotate(path string, overlap time.Duration, now func() time.Time) (*KeyRing, error) {
	if now == nil {
		now = time.Now
	}
	if overlap < 0 {
		return nil, fmt.Errorf("rotating key file: negative overlap %v", overlap)
	}
	kf, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	t := now().UTC()
	var prev []fileKey
	taken := []string{kf.Current.ID}
	for _, p := range kf.Previous {
		if p.Expires.After(t) {
			prev = append(prev, p)
			taken = append(taken, p.ID)
		}
	}
	if overlap > 0 {
		old := kf.Current
		old.Expires = t.Add(overlap)
		prev = append(prev, old)
	}
	k, err := newKey(taken...)
	if err != nil {
		return nil, fmt.Errorf("rotating key file: %w", err)
	}
	kf = keyFile{Version: keyFileVersion, Current: fileKey{ID: k.ID, Secret: k.Secret, Created: t}, Previous: prev}
	if err := writeKeyFile(path, kf, true); err != nil {
		return nil, err
	}
	return kf.ring()
}

// readKeyFile reads and strictly decodes the key file at path after
// checking its mode. A missing file is an error matching fs.ErrNotExist.
func readKeyFile(path string) (keyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return keyFile{}, fmt.Errorf("reading key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return keyFile{}, fmt.Errorf("reading key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return keyFile{}, fmt.Errorf("reading key file %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return keyFile{}, fmt.Errorf("reading key file %s: mode is %04o, want no group or other access (chmod 600 it): %w", path, perm, ErrInsecureKeyFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return keyFile{}, fmt.Errorf("reading key file: %w", err)
	}
	if len(b) > maxKeyFileBytes {
		return keyFile{}, fmt.Errorf("reading key file %s: larger than %d bytes", path, maxKeyFileBytes)
	}
	var kf keyFile
	if err := strictjson.Unmarshal(b, &kf); err != nil {
		return keyFile{}, fmt.Errorf("decoding key file %s: %w", path, err)
	}
	if _, err := kf.ring(); err != nil {
		return keyFile{}, fmt.Errorf("decoding key file %s: %w", path, err)
	}
	return kf, nil
}

// writeKeyFile writes kf to a private temporary file beside path, fsyncs
// it, and then renames it over path (replace) or links it to path, failing
// with an error matching fs.ErrExist when path exists (!replace). It
// fsyncs the directory after.
func writeKeyFile(path string, kf keyFile, replace bool) (err error) {
	b, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding key file: %w", err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	defer func() {
		tmp.Close()
		if err != nil || !replace {
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("installing key file: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing key file directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing key file directory: %w", err)
	}
	return nil
}
