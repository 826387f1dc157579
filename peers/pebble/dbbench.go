package main

// The dbbench op (docs/harness-protocol.md): db_bench-style benchmarks on
// one database, with the semantics of peers/cpp-common/harness.cc's
// op_dbbench (keys, values, seeds), so that every engine reads the same keys
// as `shale bench db`.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

var dbbenchNames = []string{"fillseq", "fillrandom", "overwrite", "readrandom", "readhot",
	"readmissing", "seekrandom", "readseq", "readreverse"}

// dbbenchKey writes k in decimal, zero-padded to len(out) bytes.
func dbbenchKey(k uint64, out []byte) {
	for i := range out {
		out[i] = '0'
	}
	for i := len(out); k > 0 && i > 0; k /= 10 {
		i--
		out[i] = byte('0' + k%10)
	}
}

// dbbenchValues hands out half-compressible values: every 100 bytes are 50
// random printable bytes written twice (a pool of at least 1 MiB, reused).
type dbbenchValues struct {
	pool []byte
	pos  int
}

func newDbbenchValues(seed uint64, valueSize int) *dbbenchValues {
	r := newRng(seed ^ 0x7a1e5eed)
	n := max(1<<20, valueSize)
	pool := make([]byte, 0, n+100)
	half := make([]byte, 50)
	for len(pool) < n {
		for i := range half {
			half[i] = byte(' ' + r.below(95))
		}
		pool = append(append(pool, half...), half...)
	}
	return &dbbenchValues{pool: pool[:n]}
}

func (v *dbbenchValues) next(n int) []byte {
	if v.pos+n > len(v.pool) {
		v.pos = 0
	}
	v.pos += n
	return v.pool[v.pos-n : v.pos]
}

// isPebbleFile reports whether name is a file Pebble makes in its directory.
func isPebbleFile(name string) bool {
	for _, p := range []string{"MANIFEST-", "OPTIONS-", "marker."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "CURRENT" || name == "LOCK" || strings.HasSuffix(name, ".sst") ||
		strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".dbtmp")
}

// destroy deletes the Pebble database in dir as LevelDB's DestroyDB does:
// it takes the database's LOCK (the fcntl lock Pebble's Open takes) first,
// so a database another process has open is refused with nothing deleted;
// then it deletes Pebble's files, the lock last, and the directory if
// that leaves it empty. A directory that does not exist is left alone.
func destroy(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lockPath := filepath.Join(dir, "LOCK")
	lock, err := vfs.Default.Lock(lockPath)
	if err != nil {
		return fmt.Errorf("pebble destroy %s: lock %s: %v", dir, lockPath, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		lock.Close()
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && isPebbleFile(e.Name()) && e.Name() != "LOCK" {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				lock.Close()
				return fmt.Errorf("pebble destroy %s: %v", dir, err)
			}
		}
	}
	if err := lock.Close(); err != nil {
		return err
	}
	os.Remove(lockPath)
	os.Remove(dir) // fails, harmlessly, if anything else is left
	return nil
}

// dbbenchOptions are the geth options with the request's cache, open
// files, filters and compression.
func dbbenchOptions(req *Request) (*pebble.Options, *pebble.Cache) {
	opts, cache := gethOptions(vfs.Default, int64(req.CacheBytes), false)
	if req.OpenFiles >= 0 {
		// Pebble keeps at least 64 tables open whatever this says; 0 would
		// mean its default of 1000.
		opts.MaxOpenFiles = max(int(req.OpenFiles), 1)
	}
	for i := range opts.Levels {
		switch {
		case req.BloomBits == 0:
			opts.Levels[i].FilterPolicy = nil
		case req.BloomBits > 0:
			opts.Levels[i].FilterPolicy = bloom.FilterPolicy(int(req.BloomBits))
		}
		if req.Compression == "none" {
			opts.Levels[i].Compression = pebble.NoCompression
		}
	}
	opts.ErrorIfNotExists = !req.Fresh
	opts.ErrorIfExists = req.Fresh
	return opts, cache
}

type dbbenchOut struct {
	ops, found, bytes uint64
	err               error
}

// dbbenchThread runs thread t of one benchmark.
func dbbenchThread(db *pebble.DB, req *Request, step DbBenchStep, t int) (out dbbenchOut) {
	name := step.Name
	r := newRng(step.Seed*gamma + uint64(t) + 1)
	key := make([]byte, req.KeySize)
	switch name {
	case "fillseq", "fillrandom", "overwrite":
		values := newDbbenchValues(step.Seed+uint64(t), req.ValueSize)
		for i := uint64(0); i < req.Num; i++ {
			k := i
			if name != "fillseq" {
				k = r.below(req.Num)
			}
			dbbenchKey(k, key)
			v := values.next(req.ValueSize)
			if err := db.Set(key, v, pebble.NoSync); err != nil {
				out.err = err
				return
			}
			out.bytes += uint64(len(key) + len(v))
			out.ops++
		}
		return
	case "readseq", "readreverse":
		it, err := db.NewIter(nil)
		if err != nil {
			out.err = err
			return
		}
		valid := it.First()
		if name == "readreverse" {
			valid = it.Last()
		}
		for ; valid && out.ops < req.Reads; out.ops++ {
			out.bytes += uint64(len(it.Key()) + len(it.Value()))
			if name == "readreverse" {
				valid = it.Prev()
			} else {
				valid = it.Next()
			}
		}
		out.found = out.ops
		out.err = errors.Join(it.Error(), it.Close())
		return
	}
	keyRange := req.Num
	if name == "readhot" {
		keyRange = max(1, (req.Num+99)/100)
	}
	for i := uint64(0); i < req.Reads; i++ {
		dbbenchKey(r.below(keyRange), key)
		if name == "seekrandom" {
			it, err := db.NewIter(nil)
			if err != nil {
				out.err = err
				return
			}
			if it.SeekGE(key) {
				out.bytes += uint64(len(it.Key()) + len(it.Value()))
				if string(it.Key()) == string(key) {
					out.found++
				}
			}
			if err := errors.Join(it.Error(), it.Close()); err != nil {
				out.err = err
				return
			}
		} else {
			k := key
			if name == "readmissing" {
				k = append(key[:len(key):len(key)], '.')
			}
			v, closer, err := db.Get(k)
			if err == nil {
				out.found++
				out.bytes += uint64(len(k) + len(v))
				closer.Close()
			} else if !errors.Is(err, pebble.ErrNotFound) {
				out.err = err
				return
			}
		}
		out.ops++
	}
	return
}

// dbbench runs the request's benchmarks in order on one database.
func dbbench(req *Request) (*DbBenchReply, error) {
	for _, s := range req.Benchmarks {
		if !slices.Contains(dbbenchNames, s.Name) {
			return nil, fmt.Errorf("dbbench: unknown benchmark %q", s.Name)
		}
	}
	digits := 1
	for v := max(req.Num, 1) - 1; v >= 10; v /= 10 {
		digits++
	}
	if digits > req.KeySize {
		return nil, fmt.Errorf("dbbench: key_size %d cannot hold num %d", req.KeySize, req.Num)
	}
	if req.Fresh {
		if err := destroy(req.Dir); err != nil {
			return nil, err
		}
	}
	raiseFileLimit()
	opts, cache := dbbenchOptions(req)
	db, err := pebble.Open(req.Dir, opts)
	cache.Unref()
	if err != nil {
		return nil, fmt.Errorf("open %s: %v", req.Dir, err)
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	reply := &DbBenchReply{Engine: engineLabel(req.Config), Results: []DbBenchResult{}}
	for _, step := range req.Benchmarks {
		m0 := db.Metrics()
		outs := make([]dbbenchOut, req.Threads)
		start := time.Now()
		var wg sync.WaitGroup
		for t := range outs {
			wg.Add(1)
			go func(t int) {
				defer wg.Done()
				outs[t] = dbbenchThread(db, req, step, t)
			}(t)
		}
		wg.Wait()
		wall := time.Since(start).Seconds()
		var sum dbbenchOut
		for _, o := range outs {
			if o.err != nil {
				return nil, fmt.Errorf("dbbench %s: %v", step.Name, o.err)
			}
			sum.ops += o.ops
			sum.found += o.found
			sum.bytes += o.bytes
		}
		m1 := db.Metrics()
		reply.Results = append(reply.Results, DbBenchResult{
			Name:             step.Name,
			Ops:              sum.ops,
			Seconds:          wall,
			MicrosPerOp:      wall * 1e6 * float64(req.Threads) / float64(max(sum.ops, 1)),
			Found:            sum.found,
			Bytes:            sum.bytes,
			BlockCacheHits:   u64(uint64(m1.BlockCache.Hits - m0.BlockCache.Hits)),
			BlockCacheMisses: u64(uint64(m1.BlockCache.Misses - m0.BlockCache.Misses)),
			TableCacheHits:   u64(uint64(m1.TableCache.Hits - m0.TableCache.Hits)),
			TableCacheMisses: u64(uint64(m1.TableCache.Misses - m0.TableCache.Misses)),
		})
		logf("dbbench %s: %d ops in %.3f s", step.Name, sum.ops, wall)
	}
	if req.Settle {
		start := time.Now()
		if err := db.Flush(); err != nil {
			return nil, fmt.Errorf("flush: %v", err)
		}
		settle(db)
		reply.SettleSeconds = time.Since(start).Seconds()
	}
	err = db.Close()
	db = nil
	if err != nil {
		return nil, fmt.Errorf("close: %v", err)
	}
	return reply, nil
}
