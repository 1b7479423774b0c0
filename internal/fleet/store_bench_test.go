package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
)

// storeService does what one judged service asks of the store: a Lookup
// that misses, its record, SARIF log and outcome put, and its binding; then
// a rerun's Lookup and reads.
func storeService(ctx context.Context, st ResultStore, i int, rec, sarif []byte) error {
	key := fmt.Sprintf("judge/bench-%d/static/last=true", i)
	if _, ok, err := st.Lookup(ctx, key); err != nil || ok {
		return fmt.Errorf("lookup before: found=%v: %w", ok, err)
	}
	rec = fmt.Appendf(rec[:len(rec):len(rec)], "%d", i)
	sarif = fmt.Appendf(sarif[:len(sarif):len(sarif)], "%d", i)
	var ds []string
	for _, b := range [][]byte{rec, sarif, fmt.Appendf(nil, `{"state":"done","n":%d}`, i)} {
		d, err := st.Put(ctx, b)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	if _, err := st.Bind(ctx, key, ds[2]); err != nil {
		return err
	}
	d, ok, err := st.Lookup(ctx, key)
	if err != nil || !ok {
		return fmt.Errorf("lookup after: found=%v: %w", ok, err)
	}
	for _, d := range []string{d, ds[0], ds[1]} {
		if _, err := st.Get(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkStorePerService measures the store's share of a service, side
// by side: a shared directory (FSStore) and a real S3 server on loopback
// (versitygw, BlobStore). It reports each one's median per service and the
// S3 store's overhead above the directory.
func BenchmarkStorePerService(b *testing.B) {
	srv := fleettest.StartS3(b, b.TempDir())
	for _, kv := range [][2]string{{"AWS_ACCESS_KEY_ID", srv.AccessKey}, {"AWS_SECRET_ACCESS_KEY", srv.SecretKey}, {"AWS_EC2_METADATA_DISABLED", "true"}} {
		b.Setenv(kv[0], kv[1])
	}
	ctx := b.Context()
	rec, sarif := make([]byte, 2<<10), make([]byte, 8<<10)
	const n = 50
	run := func(st ResultStore, base int) time.Duration {
		start := time.Now()
		for i := range n {
			if err := storeService(ctx, st, base+i, rec, sarif); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / n
	}
	var fsT, s3T []time.Duration
	round := 0
	for b.Loop() {
		fs, err := OpenFSStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		st, err := OpenStore(ctx, srv.URL(fmt.Sprintf("bench/%d", round)))
		if err != nil {
			b.Fatal(err)
		}
		fsT = append(fsT, run(fs, round*n))
		s3T = append(s3T, run(st, round*n))
		_ = st.(*BlobStore).Close()
		round++
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	f, s := med(fsT), med(s3T)
	b.ReportMetric(f, "fs-ms/service")
	b.ReportMetric(s, "s3-ms/service")
	b.ReportMetric(s-f, "s3-overhead-ms/service")
	b.ReportMetric(s/f, "s3/fs")
}
