package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// CountingFS wraps a vfs.FS and counts the ReadAt calls Pebble makes on table
// (.sst) files and the bytes they ask for. While recording, it also notes
// each read's table and offset, so that the reads can be attributed to block
// kinds afterwards (see Classify).
type CountingFS struct {
	vfs.FS

	reads atomic.Uint64
	bytes atomic.Uint64

	recording atomic.Bool
	shards    [64]readShard

	pathsMu sync.Mutex
	paths   map[uint64]string // table file number -> path
}

// readAt identifies a read: table file number and offset.
type readAt struct {
	file uint64
	off  int64
}

type readShard struct {
	mu     sync.Mutex
	counts map[readAt]uint64
}

// NewCountingFS wraps fs.
func NewCountingFS(fs vfs.FS) *CountingFS {
	return &CountingFS{FS: fs, paths: map[uint64]string{}}
}

// Counters returns the read calls and bytes counted so far.
func (c *CountingFS) Counters() (reads, bytes uint64) {
	return c.reads.Load(), c.bytes.Load()
}

// Record turns recording of read offsets on or off.
func (c *CountingFS) Record(on bool) { c.recording.Store(on) }

// tableNumber returns the file number of a table file name ("000123.sst").
func tableNumber(name string) (uint64, bool) {
	base := filepath.Base(name)
	if !strings.HasSuffix(base, ".sst") {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(base, ".sst"), 10, 64)
	return n, err == nil
}

// Open opens name; table files come back wrapped in a counting file.
func (c *CountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	num, ok := tableNumber(name)
	if !ok {
		return f, nil
	}
	c.pathsMu.Lock()
	c.paths[num] = name
	c.pathsMu.Unlock()
	return &countingFile{File: f, fs: c, num: num}, nil
}

// countingFile counts ReadAt calls (and plain Reads) on one table file.
type countingFile struct {
	vfs.File
	fs  *CountingFS
	num uint64
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.count(f.num, off, len(p))
	return f.File.ReadAt(p, off)
}

func (f *countingFile) Read(p []byte) (int, error) {
	f.fs.count(f.num, -1, len(p))
	return f.File.Read(p)
}

func (c *CountingFS) count(num uint64, off int64, n int) {
	c.reads.Add(1)
	c.bytes.Add(uint64(n))
	if !c.recording.Load() {
		return
	}
	s := &c.shards[(num*31+uint64(off)/4096)%uint64(len(c.shards))]
	s.mu.Lock()
	if s.counts == nil {
		s.counts = map[readAt]uint64{}
	}
	s.counts[readAt{num, off}]++
	s.mu.Unlock()
}

// Kind is what a read of a table file fetched.
type Kind int

// The kinds of table reads.
const (
	KindData     Kind = iota // a data block
	KindIndex                // an index partition of a two-level index
	KindTopIndex             // a top-level index, or a whole single-level index
	KindFilter               // the table's bloom filter block
	KindOpenMeta             // metaindex or properties block, read at table open (through the block cache)
	KindFooter               // the footer, read at table open (not through the block cache)
	KindOther                // anything else (range deletions, value blocks, unknown offsets)
	numKinds
)

// KindReads are recorded reads per kind.
type KindReads [numKinds]uint64

// tableLayout maps a table's block offsets to their kinds.
type tableLayout struct {
	kinds      map[int64]Kind
	footerFrom int64 // reads at or after this offset are footer reads
}

// readLayout opens a table through fs (an uncounted file system) and learns
// where its blocks are. It reads the table's index blocks, so call it after
// the measurement.
func readLayout(fs vfs.FS, path string) (*tableLayout, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	// The reader learns where the filter is only for a policy it knows.
	filter := bloom.FilterPolicy(10)
	r, err := sstable.NewReader(readable, sstable.ReaderOptions{
		Filters: map[string]sstable.FilterPolicy{filter.Name(): filter},
	})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		return nil, err
	}
	t := &tableLayout{kinds: map[int64]Kind{}}
	for _, d := range l.Data {
		t.kinds[int64(d.Offset)] = KindData
	}
	if l.TopIndex.Length > 0 {
		t.kinds[int64(l.TopIndex.Offset)] = KindTopIndex
		for _, p := range l.Index {
			t.kinds[int64(p.Offset)] = KindIndex
		}
	} else {
		// A single-level index is the whole index: it counts as top level.
		for _, p := range l.Index {
			t.kinds[int64(p.Offset)] = KindTopIndex
		}
	}
	if l.Filter.Length > 0 {
		t.kinds[int64(l.Filter.Offset)] = KindFilter
	}
	t.kinds[int64(l.MetaIndex.Offset)] = KindOpenMeta
	t.kinds[int64(l.Properties.Offset)] = KindOpenMeta
	// Pebble reads the footer as the file's last 53 bytes (maxFooterLen),
	// which may start before the footer proper.
	const maxFooterLen = 53
	t.footerFrom = int64(l.Footer.Offset+l.Footer.Length) - maxFooterLen
	if t.footerFrom > int64(l.Footer.Offset) {
		t.footerFrom = int64(l.Footer.Offset)
	}
	return t, nil
}

func (t *tableLayout) kind(off int64) Kind {
	if k, ok := t.kinds[off]; ok {
		return k
	}
	if off >= t.footerFrom {
		return KindFooter
	}
	return KindOther
}

// Classify attributes the recorded reads to block kinds, learning each
// table's layout through the uncounted file system raw. It reads index
// blocks, so it must run after the measured counters were taken.
func (c *CountingFS) Classify(raw vfs.FS) (KindReads, error) {
	var out KindReads
	layouts := map[uint64]*tableLayout{}
	var unknown []string
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		counts := s.counts
		s.counts = nil
		s.mu.Unlock()
		for at, n := range counts {
			l, ok := layouts[at.file]
			if !ok {
				c.pathsMu.Lock()
				path := c.paths[at.file]
				c.pathsMu.Unlock()
				var err error
				if l, err = readLayout(raw, path); err != nil {
					return out, fmt.Errorf("layout of table %d: %v", at.file, err)
				}
				layouts[at.file] = l
			}
			k := l.kind(at.off)
			out[k] += n
			if k == KindOther {
				unknown = append(unknown, fmt.Sprintf("%06d.sst@%d", at.file, at.off))
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(unknown) > 10 {
			unknown = unknown[:10]
		}
		fmt.Fprintf(os.Stderr, "shale-pebble-harness: %d reads at offsets that are no data, index or filter block, e.g. %v\n",
			out[KindOther], unknown)
	}
	return out, nil
}
