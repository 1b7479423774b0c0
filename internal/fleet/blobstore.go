package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3:// URLs
	"gocloud.dev/gcerrors"
)

// ErrNoConditionalWrite matches a store that does not honour a
// create-if-absent write (If-None-Match: *): there, two workers that
// finish the same service at once could both bind a result, so it is
// refused.
var ErrNoConditionalWrite = errors.New("the object store does not honour conditional writes (If-None-Match: *)")

// OpenStore opens the result store at location:
//
//   - a path, or file:///path: an FSStore in that directory, which every
//     host must see at the same path (one host, or a shared filesystem);
//   - s3://bucket/prefix?endpoint=URL&region=R: a BlobStore in an S3 or
//     S3-compatible bucket, under prefix. Credentials come from the AWS
//     environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile,
//     or a role). With an endpoint, requests use path-style addressing
//     unless use_path_style=false is given. Other query parameters are
//     gocloud.dev's s3blob ones.
//
// gs:// and azblob:// are refused: this build has no tested backend for
// them. An object store that does not honour a conditional write is
// refused with ErrNoConditionalWrite. The store may hold resources: Close
// it when it is an io.Closer.
func OpenStore(ctx context.Context, location string) (ResultStore, error) {
	if location == "" {
		return nil, errors.New("no result store: pass a directory, file:///path or s3://bucket/prefix")
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme == "" || filepath.IsAbs(location) {
		return OpenFSStore(location)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%s: a file URL names a local path, file:///path, not a host (%s)", location, u.Host)
		}
		if u.Path == "" {
			return nil, fmt.Errorf("%s: the file URL has no path: want file:///path", location)
		}
		return OpenFSStore(u.Path)
	case "s3":
		return openS3(ctx, u)
	case "gs", "azblob":
		return nil, fmt.Errorf("%s: %s:// result stores are not supported in this build (no backend here is tested against one); use s3:// (an S3-compatible endpoint of that cloud works) or a shared directory", location, u.Scheme)
	default:
		return nil, fmt.Errorf("%s: unknown result store scheme %q: want a directory, file:///path or s3://bucket/prefix?endpoint=URL&region=R", location, u.Scheme)
	}
}

func openS3(ctx context.Context, u *url.URL) (*BlobStore, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%s: no bucket: want s3://bucket/prefix", redactURL(u))
	}
	q := u.Query()
	if q.Get("endpoint") != "" && q.Get("use_path_style") == "" && q.Get("s3ForcePathStyle") == "" {
		q.Set("use_path_style", "true")
	}
	open := url.URL{Scheme: "s3", Host: u.Host, RawQuery: q.Encode()}
	b, err := blob.OpenBucket(ctx, open.String())
	if err != nil {
		return nil, fmt.Errorf("opening the result store %s: %w", redactURL(u), err)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
	}
	s := &BlobStore{bucket: b, where: redactURL(u)}
	if err := s.checkConditionalWrite(ctx); err != nil {
		_ = b.Close()
		return nil, err
	}
	return s, nil
}

// redactURL is a store URL without its user information, which may hold
// a secret.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// BlobStore is a ResultStore in an object store bucket: objects/<hex> and
// keys/<sha256 of the key>, each written once. Bind is a create-if-absent
// write (If-None-Match: *), so concurrent binders on any hosts agree on one
// winner; OpenStore refuses a store that does not honour it. Reads are
// checked against their digest. It is safe for concurrent use.
type BlobStore struct {
	bucket *blob.Bucket
	where  string
}

var _ ResultStore = (*BlobStore)(nil)

// String is the store's URL, without credentials.
func (s *BlobStore) String() string { return s.where }

// Close closes the bucket.
func (s *BlobStore) Close() error { return s.bucket.Close() }

func blobObject(h string) string { return "objects/" + h }

func blobKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "keys/" + hex.EncodeToString(sum[:])
}

// writeOnce writes data under name unless the name exists, and reports
// whether it wrote. A conflict between two conditional writes in flight
// (S3's 409 ConditionalRequestConflict) is tried again.
func (s *BlobStore) writeOnce(ctx context.Context, name string, data []byte) (bool, error) {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := s.bucket.WriteAll(ctx, name, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"})
		switch {
		case err == nil:
			return true, nil
		case gcerrors.Code(err) == gcerrors.FailedPrecondition:
			return false, nil
		case !isConditionalConflict(err):
			return false, fmt.Errorf("writing %s to the result store %s: %w", name, s.where, err)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func isConditionalConflict(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ConditionalRequestConflict"
}

// checkConditionalWrite writes a fresh probe object twice, create-if-absent:
// the second write must be refused.
func (s *BlobStore) checkConditionalWrite(ctx context.Context) error {
	name := "probe/" + rand.Text()
	defer func() { _ = s.bucket.Delete(context.WithoutCancel(ctx), name) }()
	if wrote, err := s.writeOnce(ctx, name, []byte("1")); err != nil {
		return err
	} else if !wrote {
		return fmt.Errorf("the result store %s: %w: a create-if-absent write of a new object was refused", s.where, ErrNoConditionalWrite)
	}
	if wrote, err := s.writeOnce(ctx, name, []byte("2")); err != nil {
		return err
	} else if wrote {
		return fmt.Errorf("the result store %s: %w: it overwrote an object that a create-if-absent write must leave; use a store that does (Amazon S3, versitygw), or a shared directory", s.where, ErrNoConditionalWrite)
	}
	return nil
}

// Put implements ResultStore.
func (s *BlobStore) Put(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	// Content-addressed: an object already there holds these bytes. A
	// refused write whose object cannot be read yet is another writer's
	// still in flight (versitygw refuses before it publishes), which may
	// yet fail: written again until one is there.
	for b := newBackoff(); ; {
		wrote, err := s.writeOnce(ctx, blobObject(h), data)
		if err != nil {
			return "", err
		}
		if wrote {
			return digestPrefix + h, nil
		}
		held, err := s.bucket.Exists(ctx, blobObject(h))
		if err != nil {
			return "", fmt.Errorf("reading the result store %s: %w", s.where, err)
		}
		if held {
			return digestPrefix + h, nil
		}
		if err := b.wait(ctx); err != nil {
			return "", err
		}
	}
}

// backoff spaces the tries of a write that waits for another writer's.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 20 * time.Millisecond} }

func (b *backoff) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.d):
	}
	b.d = min(2*b.d, time.Second)
	return nil
}

// Get implements ResultStore.
func (s *BlobStore) Get(ctx context.Context, digest string) ([]byte, error) {
	h, err := hexOf(digest)
	if err != nil {
		return nil, err
	}
	data, err := s.bucket.ReadAll(ctx, blobObject(h))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %w (%s)", digest, ErrNotFound, s.where)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the result store %s: %w", s.where, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("the result store's object %s is damaged (its content does not match its digest): delete %s in %s", digest, blobObject(h), s.where)
	}
	return data, nil
}

// Bind implements ResultStore, as FSStore does: a key bound to an object
// the store no longer holds is bound again under a name derived from the
// lost digest, with the same create-if-absent write.
func (s *BlobStore) Bind(ctx context.Context, key, digest string) (string, error) {
	if _, err := hexOf(digest); err != nil {
		return "", err
	}
	for b := newBackoff(); ; {
		wrote, err := s.writeOnce(ctx, blobKey(key), []byte(digest))
		if err != nil {
			return "", err
		}
		if wrote {
			return digest, nil
		}
		got, held, err := s.readKey(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			// Refused, yet not readable: another binder's write is in
			// flight. Its binding is read once it lands, or, if it
			// failed, this one is written.
			if err := b.wait(ctx); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		if held {
			return got, nil
		}
		key = lostKey(key, got)
	}
}

// readKey reads key's binding and whether the store holds its object.
func (s *BlobStore) readKey(ctx context.Context, key string) (string, bool, error) {
	data, err := s.bucket.ReadAll(ctx, blobKey(key))
	if err != nil {
		return "", false, fmt.Errorf("reading the result store %s: %w", s.where, err)
	}
	d := strings.TrimSpace(string(data))
	h, err := hexOf(d)
	if err != nil {
		return "", false, fmt.Errorf("the result store's key %s in %s is damaged: %w", blobKey(key), s.where, err)
	}
	held, err := s.bucket.Exists(ctx, blobObject(h))
	if err != nil {
		return "", false, fmt.Errorf("reading the result store %s: %w", s.where, err)
	}
	return d, held, nil
}

// Lookup implements ResultStore.
func (s *BlobStore) Lookup(ctx context.Context, key string) (string, bool, error) {
	for {
		d, held, err := s.readKey(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if held {
			return d, true, nil
		}
		key = lostKey(key, d)
	}
}

// Keys counts the bound keys: how many results the store holds.
func (s *BlobStore) Keys(ctx context.Context) (int, error) {
	n := 0
	it := s.bucket.List(&blob.ListOptions{Prefix: "keys/"})
	for {
		_, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("listing the result store %s: %w", s.where, err)
		}
		n++
	}
}

// Prune removes the objects and bindings written longer ago than olderThan
// (every one for 0), and probe objects an interrupted open left. An object
// store cannot mark an object used, so a result in use is judged again
// once it is older; a bucket lifecycle rule on the prefix does the same.
func (s *BlobStore) Prune(ctx context.Context, olderThan time.Duration) (PruneStats, error) {
	var st PruneStats
	cutoff := time.Now().Add(-olderThan)
	for _, sub := range []string{"objects/", "keys/", "probe/"} {
		it := s.bucket.List(&blob.ListOptions{Prefix: sub})
		for {
			o, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return st, fmt.Errorf("pruning the result store %s: %w", s.where, err)
			}
			old := olderThan == 0 || o.ModTime.Before(cutoff)
			if sub == "probe/" {
				old = time.Since(o.ModTime) > time.Hour
			}
			if !old {
				if sub != "probe/" {
					st.Kept++
				}
				continue
			}
			if err := s.bucket.Delete(ctx, o.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return st, fmt.Errorf("pruning the result store %s: %w", s.where, err)
			}
			if sub != "probe/" {
				st.Removed++
			}
			st.Bytes += o.Size
		}
	}
	return st, nil
}
