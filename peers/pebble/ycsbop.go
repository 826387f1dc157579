package main

// The ycsb op (docs/harness-protocol.md): loads a database of YCSB records,
// or runs a workload on it with a preset's options mapped to Pebble's
// (README.md, "Op ycsb"). Records, operations and their semantics are those
// of `shale bench ycsb` and of peers/cpp-common/ycsb_op.cc.
//
// Concurrency: a run's goroutines share the *pebble.DB (safe for concurrent
// use) and a ycsbShared; each owns its generator, buffers and latencies. A
// sampler goroutine keeps the largest compaction-debt estimate; Pebble's
// event listener adds the write stalls under stallCounter's mutex.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

const (
	ycsbMarkerKey   = "!ycsb" // sorts before every "user" key: no scan meets it
	ycsbKeyEnd      = "user:" // every record key starts with "user" and a digit
	ycsbLoadBatch   = 1000
	ycsbLoadCache   = 8 << 20
	ycsbSampleEvery = 250 * time.Millisecond
)

// ycsbMarker is the marker record of a loaded database.
type ycsbMarker struct {
	Records     uint64 `json:"records"`
	Present     uint64 `json:"present"`
	FieldCount  uint64 `json:"field_count"`
	FieldLength uint64 `json:"field_length"`
	Filters     string `json:"filters"`
}

// stallCounter counts Pebble's write stalls (WriteStallBegin to
// WriteStallEnd: every write waits while one lasts) and their time.
type stallCounter struct {
	mu     sync.Mutex
	count  uint64
	micros uint64
	since  time.Time
}

func (s *stallCounter) begin(pebble.WriteStallBeginInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.since = time.Now()
}

func (s *stallCounter) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.since.IsZero() {
		s.micros += uint64(time.Since(s.since).Microseconds())
		s.since = time.Time{}
	}
}

// read returns the stalls so far, one in progress counted to now.
func (s *stallCounter) read() (count, micros uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	micros = s.micros
	if !s.since.IsZero() {
		micros += uint64(time.Since(s.since).Microseconds())
	}
	return s.count, micros
}

// ycsbSettingsIgnored lists the settings Pebble v1.1.5 has no equivalent
// for (README.md).
func ycsbSettingsIgnored(s *YcsbSettings) []string {
	out := []string{}
	if s.PinTableMetadata {
		out = append(out, "pin_table_metadata") // index and filter blocks are cached, never pinned
	}
	if s.MetadataWithTables {
		out = append(out, "metadata_with_tables") // ... and never kept outside the cache
	}
	if s.CompactionRateLimit != nil {
		out = append(out, "compaction_rate_limit") // no compaction rate limiter
	}
	if s.CompactionNice != 0 {
		out = append(out, "compaction_nice")
	}
	return out
}

// ycsbOptions maps a preset onto Pebble's options; Pebble's defaults
// elsewhere, as the RocksDB harness keeps RocksDB's.
func ycsbOptions(s *YcsbSettings, create bool, stalls *stallCounter) (*pebble.Options, *pebble.Cache) {
	cache := pebble.NewCache(int64(max(s.BlockCacheBytes, 1)))
	levels := make([]pebble.LevelOptions, 7)
	for i := range levels {
		if s.Filters == "bloom10" {
			levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
	}
	opts := &pebble.Options{
		FS:               vfs.Default,
		Cache:            cache,
		MaxOpenFiles:     gethHandles, // every table kept open, as RocksDB's -1
		Levels:           levels,
		ErrorIfNotExists: !create,
	}
	if s.WriteBufferSize > 0 {
		opts.MemTableSize = s.WriteBufferSize
	}
	if s.BaseLevelBytes != nil {
		opts.LBaseMaxBytes = int64(*s.BaseLevelBytes)
	}
	if s.Preset == "mild-pressure" {
		// RocksDB's target_file_size_base with multiplier 1: every level.
		for i := range levels {
			levels[i].TargetFileSize = int64(s.TargetFileSizeBase)
		}
		// One of the background jobs flushes; the others compact.
		compactions := int(max(s.MaxBackgroundJobs, 2) - 1)
		opts.MaxConcurrentCompactions = func() int { return compactions }
	}
	if stalls != nil {
		opts.EventListener = &pebble.EventListener{WriteStallBegin: stalls.begin, WriteStallEnd: stalls.end}
	}
	return opts, cache
}

// openYcsb opens the database in dir with the preset's options.
func openYcsb(dir string, s *YcsbSettings, create bool, stalls *stallCounter) (*pebble.DB, error) {
	raiseFileLimit()
	opts, cache := ycsbOptions(s, create, stalls)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %v", dir, err)
	}
	return db, nil
}

func readMarker(db *pebble.DB) (*ycsbMarker, error) {
	v, closer, err := db.Get([]byte(ycsbMarkerKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	var m ycsbMarker
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("unreadable YCSB marker record: %v", err)
	}
	return &m, nil
}

func writeMarker(db *pebble.DB, m ycsbMarker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return db.Set([]byte(ycsbMarkerKey), data, pebble.NoSync)
}

func ycsbEngine() string { return engineName + " " + engineVersion }

// ycsb serves the op's load and run phases.
func ycsb(req *Request) (any, error) {
	values := ycsbValues{FieldCount: req.FieldCount, FieldLength: req.FieldLength, Seed: req.Seed}
	ignored := ycsbSettingsIgnored(req.Settings)
	if len(ignored) > 0 {
		logf("ycsb: Pebble has no equivalent of these settings, which it ignores: %v", ignored)
	}
	if req.Phase == "load" {
		return ycsbLoad(req, values, ignored)
	}
	return ycsbRun(req, values, ignored)
}

// ycsbLoad writes records 0..records in batches of 1,000 (goroutines taking
// batches in turn) with the preset's filters, a small cache and Pebble's
// default memtable; settles, writes the marker, flushes.
func ycsbLoad(req *Request, values ycsbValues, ignored []string) (*YcsbLoadReply, error) {
	start := time.Now()
	s := *req.Settings
	s.Preset, s.BlockCacheBytes, s.WriteBufferSize = "load", ycsbLoadCache, 0
	db, err := openYcsb(req.Dir, &s, true, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	if m, err := readMarker(db); err != nil || m != nil {
		return nil, errors.Join(err, fmt.Errorf("%s already holds a YCSB database", req.Dir))
	}
	var next atomic.Uint64
	threads := max(req.Threads, 1)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			var key, value []byte
			for {
				lo := next.Add(ycsbLoadBatch) - ycsbLoadBatch
				if lo >= req.Records {
					return
				}
				b := db.NewBatch()
				for n := lo; n < min(lo+ycsbLoadBatch, req.Records); n++ {
					key = ycsbKey(n, key)
					value = values.record(n, value)
					if err := b.Set(key, value, nil); err != nil {
						errs[t] = err
						return
					}
				}
				if err := b.Commit(pebble.NoSync); err != nil {
					errs[t] = err
					return
				}
				b.Close()
			}
		}(t)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("write: %v", err)
	}
	if err := db.Flush(); err != nil {
		return nil, fmt.Errorf("flush: %v", err)
	}
	settle(db)
	m := ycsbMarker{Records: req.Records, Present: req.Records, FieldCount: values.FieldCount,
		FieldLength: values.FieldLength, Filters: req.Settings.Filters}
	if err := writeMarker(db, m); err != nil {
		return nil, err
	}
	if err := db.Flush(); err != nil {
		return nil, fmt.Errorf("flush: %v", err)
	}
	err = db.Close()
	db = nil
	if err != nil {
		return nil, fmt.Errorf("close: %v", err)
	}
	return &YcsbLoadReply{Engine: ycsbEngine(), Seconds: time.Since(start).Seconds(), SettingsIgnored: ignored}, nil
}

// ycsbWorker performs one goroutine's operations as YCSB's RocksDB binding
// does: an update reads the record and writes it back with one field
// replaced; a read-modify-write is a read followed by such an update.
type ycsbWorker struct {
	db         *pebble.DB
	values     ycsbValues
	key, value []byte
	gets       uint64
}

func (w *ycsbWorker) perform(op ycsbOp) error {
	switch op.kind {
	case kindRead:
		return w.read(op.keynum)
	case kindUpdate:
		return w.update(op.keynum, op.field, op.version)
	case kindInsert:
		w.key = ycsbKey(op.keynum, w.key)
		w.value = w.values.record(op.keynum, w.value)
		return w.db.Set(w.key, w.value, pebble.NoSync)
	case kindScan:
		return w.scan(op.keynum, op.length)
	default: // read-modify-write
		if err := w.read(op.keynum); err != nil {
			return err
		}
		return w.update(op.keynum, op.field, op.version)
	}
}

func (w *ycsbWorker) read(n uint64) error {
	w.key = ycsbKey(n, w.key)
	w.gets++
	v, closer, err := w.db.Get(w.key)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("record %d is missing", n)
	}
	if err != nil {
		return err
	}
	w.value = append(w.value[:0], v...)
	closer.Close()
	if len(w.value) != w.values.recordLen() {
		return fmt.Errorf("record %d has the wrong length", n)
	}
	return nil
}

func (w *ycsbWorker) update(n, field, version uint64) error {
	if err := w.read(n); err != nil {
		return err
	}
	if !w.values.updateField(n, field, version, w.value) {
		return fmt.Errorf("record %d: field out of range", n)
	}
	return w.db.Set(w.key, w.value, pebble.NoSync)
}

// scan reads up to length records from the key of n, below "user:", each
// value copied out.
func (w *ycsbWorker) scan(n, length uint64) error {
	w.key = ycsbKey(n, w.key)
	it, err := w.db.NewIter(&pebble.IterOptions{UpperBound: []byte(ycsbKeyEnd)})
	if err != nil {
		return err
	}
	got := uint64(0)
	for valid := it.SeekGE(w.key); valid && got < length; valid = it.Next() {
		w.value = append(w.value[:0], it.Value()...)
		got++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if got == 0 {
		return fmt.Errorf("scan from record %d found nothing", n)
	}
	return nil
}

// percentileUs64 is the nearest-rank q-quantile of sorted nanoseconds, in
// microseconds.
func percentileUs64(sorted []uint64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999999) - 1
	return float64(sorted[min(max(rank, 0), len(sorted)-1)]) / 1000
}

func opResult(ns []uint64, seconds float64) YcsbOpResult {
	sort.Slice(ns, func(a, b int) bool { return ns[a] < ns[b] })
	sum := 0.0
	for _, x := range ns {
		sum += float64(x)
	}
	return YcsbOpResult{Count: uint64(len(ns)), OpsPerSec: float64(len(ns)) / max(seconds, 1e-9),
		MeanUs: sum / float64(max(len(ns), 1)) / 1000, P50: percentileUs64(ns, 0.5),
		P95: percentileUs64(ns, 0.95), P99: percentileUs64(ns, 0.99), P999: percentileUs64(ns, 0.999)}
}

// ycsbRun opens the database with the preset's options, checks the marker,
// runs the operations (goroutine t seeds its generator with seed + t and
// runs operations/threads, plus one if t < operations%threads), writes the
// marker back, settles and closes.
func ycsbRun(req *Request, values ycsbValues, ignored []string) (*YcsbRunReply, error) {
	spec, err := workloadSpec(req.Workload)
	if err != nil {
		return nil, err
	}
	if req.DirectIO {
		logf("ycsb: direct_io requested, but Pebble cannot read with O_DIRECT; ignored")
	}
	stalls := &stallCounter{}
	db, err := openYcsb(req.Dir, req.Settings, false, stalls)
	if err != nil {
		return nil, err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	m, err := readMarker(db)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Records != req.Records || m.FieldCount != values.FieldCount ||
		m.FieldLength != values.FieldLength || m.Filters != req.Settings.Filters {
		return nil, fmt.Errorf("%s holds no YCSB database of %d records of this layout with %s filters",
			req.Dir, req.Records, req.Settings.Filters)
	}
	shared := newYcsbShared(spec, m.Records, m.Present, req.Operations)
	threads := max(req.Threads, 1)
	lat := make([][numYcsbKinds][]uint64, threads)
	gets := make([]uint64, threads)
	errs := make([]error, threads)
	var stop atomic.Bool

	// The largest compaction debt Pebble estimates, sampled every 250 ms.
	var pendingMax atomic.Uint64
	notePending := func() {
		p := db.Metrics().Compact.EstimatedDebt
		for cur := pendingMax.Load(); p > cur && !pendingMax.CompareAndSwap(cur, p); cur = pendingMax.Load() {
		}
	}
	notePending()
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(ycsbSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				notePending()
			}
		}
	}()
	stalls0, stallMicros0 := stalls.read()
	start := time.Now()
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			share := req.Operations / uint64(threads)
			if uint64(t) < req.Operations%uint64(threads) {
				share++
			}
			g := newYcsbGenerator(shared, req.Seed, uint64(t), values.FieldCount)
			w := &ycsbWorker{db: db, values: values}
			for j := uint64(0); j < share && !stop.Load(); j++ {
				op := g.nextOp()
				t0 := time.Now()
				if err := w.perform(op); err != nil {
					errs[t] = err
					stop.Store(true)
					return
				}
				ns := uint64(max(time.Since(t0).Nanoseconds(), 1))
				if op.kind == kindInsert {
					shared.acknowledge(op.keynum)
				}
				lat[t][op.kind] = append(lat[t][op.kind], ns)
			}
			gets[t] = w.gets
		}(t)
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	close(done)
	<-sampled
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	notePending()
	stalls1, stallMicros1 := stalls.read()
	reply := &YcsbRunReply{Engine: ycsbEngine(), Seconds: seconds, Ops: map[string]YcsbOpResult{},
		PendingCompactionBytesMax: u64(pendingMax.Load()), StallCount: u64(stalls1 - stalls0),
		StallMicros: u64(stallMicros1 - stallMicros0), SettingsIgnored: ignored}
	for k := 0; k < int(numYcsbKinds); k++ {
		var all []uint64
		for t := range lat {
			all = append(all, lat[t][k]...)
		}
		if len(all) == 0 {
			continue
		}
		reply.Operations += uint64(len(all))
		reply.Ops[kindNames[k]] = opResult(all, seconds)
	}
	reply.OpsPerSec = float64(reply.Operations) / max(seconds, 1e-9)
	for _, g := range gets {
		reply.Gets += g
	}
	m.Present = shared.last() + 1
	if err := writeMarker(db, *m); err != nil {
		return nil, err
	}
	if err := db.Flush(); err != nil {
		return nil, fmt.Errorf("flush: %v", err)
	}
	settle(db)
	err = db.Close()
	db = nil
	if err != nil {
		return nil, fmt.Errorf("close: %v", err)
	}
	return reply, nil
}
