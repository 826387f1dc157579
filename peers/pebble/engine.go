package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// Engine names and versions as the harness reports them.
const (
	engineName    = "pebble"
	engineVersion = "v1.1.5"
)

// configs are the configurations this harness knows, the default first.
var configs = []string{"geth"}

// engineLabel is the engine string of load, inspect and read replies.
func engineLabel(config string) string {
	return fmt.Sprintf("%s %s (%s)", engineName, engineVersion, config)
}

// Load-time sizing, as QuarkChain/bench_kvdb's bench_pebble opens Pebble
// (geth's pebble.New with cache = 512 MiB and handles = 100000).
const (
	gethLoadCacheMiB = 512
	gethHandles      = 100000
	// memTableLimit is geth's number of memtables (one live, one frozen).
	memTableLimit = 2
	// idealBatchSize is geth's ethdb.IdealBatchSize; WALBytesPerSync is 5x.
	idealBatchSize = 100 * 1024
)

// gethOptions returns Pebble options as go-ethereum's ethdb/pebble New sets
// them, with a block cache of cacheBytes. The memtable is sized from geth's
// load-time cache (see README.md), whatever cacheBytes is.
func gethOptions(fs vfs.FS, cacheBytes int64, readOnly bool) (*pebble.Options, *pebble.Cache) {
	memTableSize := uint64(gethLoadCacheMiB) * 1024 * 1024 / 2 / memTableLimit
	levels := make([]pebble.LevelOptions, 7)
	target := int64(2 * 1024 * 1024)
	for i := range levels {
		levels[i] = pebble.LevelOptions{TargetFileSize: target, FilterPolicy: bloom.FilterPolicy(10)}
		target *= 2
	}
	cache := pebble.NewCache(cacheBytes)
	opts := &pebble.Options{
		FS:                          fs,
		Cache:                       cache,
		MaxOpenFiles:                gethHandles,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTableLimit,
		MaxConcurrentCompactions:    runtime.NumCPU,
		Levels:                      levels,
		ReadOnly:                    readOnly,
		WALBytesPerSync:             5 * idealBatchSize,
	}
	opts.Experimental.ReadSamplingMultiplier = -1
	return opts, cache
}

// raiseFileLimit raises the soft open-file limit to the hard one, as geth
// does at start-up, so that MaxOpenFiles tables can stay open.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			logf("could not raise the open-file limit: %v", err)
		}
	}
}

// openDB opens the database in dir with the geth options.
func openDB(dir string, fs vfs.FS, cacheBytes int64, readOnly bool) (*pebble.DB, error) {
	raiseFileLimit()
	opts, cache := gethOptions(fs, cacheBytes, readOnly)
	opts.ErrorIfNotExists = readOnly
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %v", dir, err)
	}
	return db, nil
}

// checkEmptyDir fails unless dir is missing or empty.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}

// load creates the database and writes the dataset: batch b holds keys
// b*batch .. (b+1)*batch, and writer t of T writes batches t, t+T, ...
func load(req *Request, ds *Dataset) (*LoadReply, error) {
	if req.Batch == 0 {
		return nil, fmt.Errorf("batch must be at least 1")
	}
	if err := checkEmptyDir(req.Dir); err != nil {
		return nil, err
	}
	threads := max(req.Threads, 1)
	start := time.Now()
	db, err := openDB(req.Dir, vfs.Default, gethLoadCacheMiB*1024*1024, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	keys := ds.Spec.Keys
	batches := (keys + req.Batch - 1) / req.Batch
	errs := make([]error, threads)
	userBytes := make([]uint64, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			gen := ds.NewKeyGen()
			key := make([]byte, 0, 40)
			value := make([]byte, ds.Spec.ValueSize)
			for b := uint64(t); b < batches; b += uint64(threads) {
				batch := db.NewBatch()
				end := min((b+1)*req.Batch, keys)
				for i := b * req.Batch; i < end; i++ {
					key = gen.Key(i, key)
					ds.FillValue(i, value)
					if err := batch.Set(key, value, nil); err != nil {
						errs[t] = err
						return
					}
					userBytes[t] += uint64(len(key) + len(value))
				}
				if err := batch.Commit(pebble.NoSync); err != nil {
					errs[t] = err
					return
				}
				batch.Close()
				if t == 0 && b%(uint64(threads)*1000) == 0 && b > 0 {
					logf("load: %d of %d batches", b, batches)
				}
			}
		}(t)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("write: %v", err)
		}
	}
	logf("load: written, flushing")
	if err := db.Flush(); err != nil {
		return nil, fmt.Errorf("flush: %v", err)
	}
	settle(db)
	seconds := time.Since(start).Seconds()
	m := db.Metrics()
	logf("metrics after the load:\n%s", m.String())
	reply := &LoadReply{Engine: engineLabel(req.Config), Seconds: seconds, WALBytes: m.WAL.BytesWritten}
	for _, n := range userBytes {
		reply.UserBytes += n
	}
	for _, l := range m.Levels {
		reply.TableBytesWritten += l.BytesFlushed + l.BytesCompacted
	}
	if reply.UserBytes > 0 {
		reply.WriteAmp = float64(reply.TableBytesWritten) / float64(reply.UserBytes)
	}
	if reply.Shape, err = shape(db); err != nil {
		return nil, err
	}
	err = db.Close()
	db = nil
	if err != nil {
		return nil, fmt.Errorf("close: %v", err)
	}
	return reply, nil
}

// settle waits until Pebble runs no flush or compaction and has started
// none for quietPolls consecutive polls, pollInterval apart. Pebble schedules
// every compaction it wants as soon as a flush or compaction finishes, so a
// quiet spell means it wants none; EstimatedDebt may stay above zero because
// it counts every L0 byte, even below the L0 compaction threshold.
func settle(db *pebble.DB) {
	const (
		quietPolls   = 5
		pollInterval = 50 * time.Millisecond
	)
	quiet := 0
	var lastFlushes, lastCompactions int64 = -1, -1
	for quiet < quietPolls {
		time.Sleep(pollInterval)
		m := db.Metrics()
		busy := m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0 ||
			m.Flush.Count != lastFlushes || m.Compact.Count != lastCompactions
		lastFlushes, lastCompactions = m.Flush.Count, m.Compact.Count
		if busy {
			quiet = 0
		} else {
			quiet++
		}
	}
	m := db.Metrics()
	logf("settled: %d flushes, %d compactions, estimated compaction debt %d bytes, L0 %d files",
		m.Flush.Count, m.Compact.Count, m.Compact.EstimatedDebt, m.Levels[0].NumFiles)
}

// shape describes the database: levels from Pebble's metrics, composition
// from every table's properties.
func shape(db *pebble.DB) (DBShape, error) {
	var s DBShape
	m := db.Metrics()
	for i, l := range m.Levels {
		s.Levels = append(s.Levels, LevelShape{Level: uint32(i), Files: uint64(l.NumFiles), Bytes: uint64(l.Size)})
	}
	tables, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		return s, fmt.Errorf("table properties: %v", err)
	}
	last := -1
	for level, ts := range tables {
		if len(ts) > 0 {
			last = level
		}
	}
	c := &s.Composition
	for level, ts := range tables {
		for _, t := range ts {
			p := t.Properties
			if p == nil {
				return s, fmt.Errorf("table %s has no properties", t.FileNum)
			}
			c.Entries += p.NumEntries
			// Pebble's raw key size counts the 8-byte internal key trailer.
			c.RawKeyBytes += p.RawKeySize - 8*p.NumEntries
			c.RawValueBytes += p.RawValueSize
			c.DBBytes += t.Size
			c.DataBytes += p.DataSize
			c.FilterBytes += p.FilterSize
			if level < last {
				c.FilterBytesExceptLastLevel += p.FilterSize
			}
			c.IndexBytes += p.IndexSize
			if p.IndexPartitions > 0 {
				c.TopLevelIndexBytes += p.TopLevelIndexSize
			} else {
				c.TopLevelIndexBytes += p.IndexSize
			}
		}
	}
	return s, nil
}

// get reads key i and checks it against the dataset: present with its value
// when i < keys, absent otherwise.
func get(db *pebble.DB, ds *Dataset, gen *KeyGen, i uint64, key, want []byte) (found bool, err error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		if i < ds.Spec.Keys {
			return false, fmt.Errorf("key %d is missing", i)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get key %d: %v", i, err)
	}
	defer closer.Close()
	if i >= ds.Spec.Keys {
		return true, fmt.Errorf("key %d (not in the dataset of %d keys) is present", i, ds.Spec.Keys)
	}
	ds.FillValue(i, want)
	if len(v) != len(want) || string(v) != string(want) {
		return true, fmt.Errorf("key %d has a value of %d bytes that is not the dataset's (seed %d, %d bytes)",
			i, len(v), ds.Spec.Seed, ds.Spec.ValueSize)
	}
	return true, nil
}

// inspect opens the database read-only, checks that it holds the dataset
// (keys 0 and keys-1 with their values, key keys absent) and describes it.
func inspect(req *Request, ds *Dataset) (*InspectReply, error) {
	db, err := openDB(req.Dir, vfs.Default, 8<<20, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	gen := ds.NewKeyGen()
	want := make([]byte, ds.Spec.ValueSize)
	check := []uint64{ds.Spec.Keys}
	if ds.Spec.Keys > 0 {
		check = []uint64{0, ds.Spec.Keys - 1, ds.Spec.Keys}
	}
	for _, i := range check {
		if _, err := get(db, ds, gen, i, gen.Key(i, nil), want); err != nil {
			return nil, fmt.Errorf("%s does not hold the dataset: %v", req.Dir, err)
		}
	}
	s, err := shape(db)
	if err != nil {
		return nil, err
	}
	return &InspectReply{Engine: engineLabel(req.Config), Shape: s}, nil
}

// threadSlice is the contiguous slice of n Gets that thread t of threads
// runs: n/threads indices, plus one for the first n%threads threads.
func threadSlice(n, threads, t int) (int, int) {
	share, extra := n/threads, n%threads
	start := t*share + min(t, extra)
	end := start + share
	if t < extra {
		end++
	}
	return start, end
}

// runGets runs the Gets of indices over threads; with lat non-nil it stores
// each Get's latency in nanoseconds at the index's position.
func runGets(db *pebble.DB, ds *Dataset, indices []uint64, threads int, lat []uint32) (found uint64, err error) {
	founds := make([]uint64, threads)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			gen := ds.NewKeyGen()
			key := make([]byte, 0, 40)
			want := make([]byte, ds.Spec.ValueSize)
			start, end := threadSlice(len(indices), threads, t)
			for j := start; j < end; j++ {
				i := indices[j]
				key = gen.Key(i, key)
				t0 := time.Now()
				ok, err := get(db, ds, gen, i, key, want)
				if lat != nil {
					lat[j] = uint32(min(time.Since(t0).Nanoseconds(), 1<<32-1))
				}
				if err != nil {
					errs[t] = err
					return
				}
				if ok {
					founds[t]++
				}
			}
		}(t)
	}
	wg.Wait()
	for t := range errs {
		if errs[t] != nil {
			return 0, errs[t]
		}
		found += founds[t]
	}
	return found, nil
}

// percentileUs returns the q-quantile (nearest rank) of sorted nanosecond
// samples, in microseconds.
func percentileUs(sorted []uint32, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return float64(sorted[rank]) / 1000
}

// read opens the database with a block cache of cache_bytes, runs the
// warm-up Gets, then the measured Gets, and reports the counters' change
// over the measured Gets.
func read(req *Request, ds *Dataset) (*ReadReply, error) {
	if req.Trace != "" {
		return nil, fmt.Errorf("the pebble harness cannot record a block-access trace (field `trace`: %s): "+
			"Pebble v1.1 has no block-cache tracing", req.Trace)
	}
	warm, err := readIndices(req.WarmupFile)
	if err != nil {
		return nil, err
	}
	reads, err := readIndices(req.ReadsFile)
	if err != nil {
		return nil, err
	}
	threads := max(req.Threads, 1)
	fs := NewCountingFS(vfs.Default)
	db, err := openDB(req.Dir, fs, int64(req.CacheBytes), true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := runGets(db, ds, warm, threads, nil); err != nil {
		return nil, fmt.Errorf("warm-up: %v", err)
	}
	logf("read: %d warm-up Gets done, measuring %d", len(warm), len(reads))

	lat := make([]uint32, len(reads))
	m0 := db.Metrics()
	r0, b0 := fs.Counters()
	io0, ioErr := procIOReadBytes()
	fs.Record(true)
	start := time.Now()
	found, err := runGets(db, ds, reads, threads, lat)
	seconds := time.Since(start).Seconds()
	fs.Record(false)
	if err != nil {
		return nil, err
	}
	m1 := db.Metrics()
	r1, b1 := fs.Counters()
	io1, ioErr1 := procIOReadBytes()

	reply := &ReadReply{
		Engine:       engineLabel(req.Config),
		CacheBytes:   req.CacheBytes,
		DirectIO:     false,
		Gets:         uint64(len(reads)),
		Found:        found,
		Seconds:      seconds,
		ReadRequests: r1 - r0,
		ReadBytes:    b1 - b0,
		TableCache: &HitMiss{
			Hits:   uint64(m1.TableCache.Hits - m0.TableCache.Hits),
			Misses: uint64(m1.TableCache.Misses - m0.TableCache.Misses),
		},
	}
	if ioErr == nil && ioErr1 == nil {
		reply.DeviceReadBytes = u64(io1 - io0)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	reply.Latency = Latency{P50: percentileUs(lat, 0.50), P99: percentileUs(lat, 0.99), P999: percentileUs(lat, 0.999)}

	// Attribute the recorded reads to block kinds (this reads index blocks,
	// so it comes after the counters above).
	kinds, err := fs.Classify(vfs.Default)
	if err != nil {
		return nil, err
	}
	kc := func(k Kind) KindCounts {
		return KindCounts{CacheMisses: u64(kinds[k]), PhysicalReads: u64(kinds[k])}
	}
	reply.Blocks = BlockCounts{Filter: kc(KindFilter), TopIndex: kc(KindTopIndex), Index: kc(KindIndex), Data: kc(KindData)}
	reply.TableOpenReads = u64(kinds[KindOpenMeta] + kinds[KindFooter])

	// Every block-cache miss reads its block once; table opens add two
	// cached lookups (metaindex, properties) but read the footer directly.
	misses := uint64(m1.BlockCache.Misses - m0.BlockCache.Misses)
	hits := uint64(m1.BlockCache.Hits - m0.BlockCache.Hits)
	classified := kinds[KindData] + kinds[KindIndex] + kinds[KindTopIndex] + kinds[KindFilter] + kinds[KindOpenMeta]
	logf("read: block cache %d hits, %d misses; classified cached reads %d (data %d, index %d, top index %d, filter %d, table-open meta %d), footer %d, other %d",
		hits, misses, classified, kinds[KindData], kinds[KindIndex], kinds[KindTopIndex], kinds[KindFilter],
		kinds[KindOpenMeta], kinds[KindFooter], kinds[KindOther])
	if classified != misses {
		logf("read: WARNING: classified reads (%d) differ from block-cache misses (%d)", classified, misses)
	}
	if rss, err := procRSSBytes(); err == nil {
		reply.RSSBytes = u64(rss)
	}
	return reply, nil
}
