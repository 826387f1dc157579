package shale

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), &Options{WriteBufferSize: 1 << 20, BlockCacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestGetPutDeleteHas(t *testing.T) {
	db := openTest(t)
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	big := bytes.Repeat([]byte("x"), 3*getScratch+7) // larger than the stack buffer
	for k, v := range map[string][]byte{"k": []byte("v"), "empty": {}, "big": big} {
		if err := db.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get([]byte(k))
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Get(%q) = %d bytes, %v; want %d bytes", k, len(got), err, len(v))
		}
		if ok, err := db.Has([]byte(k)); err != nil || !ok {
			t.Fatalf("Has(%q) = %v, %v", k, ok, err)
		}
	}
	if err := db.Delete([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Has([]byte("k")); err != nil || ok {
		t.Fatalf("Has after Delete = %v, %v", ok, err)
	}
	// The empty key is a key like any other.
	if err := db.Put(nil, []byte("v")); err != nil {
		t.Fatalf("Put of the empty key: %v", err)
	}
	if v, err := db.Get([]byte{}); err != nil || string(v) != "v" {
		t.Fatalf("Get of the empty key = %q, %v", v, err)
	}
	// A typed error carries its code and message.
	var e *Error
	if err := db.Compact([]byte("b"), []byte("a")); !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Message == "" {
		t.Fatalf("Compact with start after end: %#v", err)
	}
}

// MultiGet against Get: values from tables and from the memtable, empty
// values, the empty key, missing and repeated keys, no keys, after Close.
func TestMultiGet(t *testing.T) {
	db := openTest(t)
	big := bytes.Repeat([]byte("y"), 5000)
	for i := 0; i < 500; i++ {
		if err := db.Put([]byte(fmt.Sprintf("t%04d", i)), []byte(fmt.Sprintf("table-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string][]byte{"big": big, "empty": {}, "": []byte("the empty key")} {
		if err := db.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("mem"), []byte("in the memtable")); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("t0007")); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("t0001"), []byte("mem"), []byte("missing"), []byte("empty"), nil, {},
		[]byte("big"), []byte("t0007"), []byte("t0499"), []byte("t0001")}
	got, err := db.MultiGet(keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("MultiGet: %d values, %v", len(got), err)
	}
	for i, k := range keys {
		want, err := db.Get(k)
		if errors.Is(err, ErrNotFound) {
			if got[i] != nil {
				t.Errorf("MultiGet[%d] (%q) = %q, want nil (missing)", i, k, got[i])
			}
			continue
		}
		if err != nil || got[i] == nil || !bytes.Equal(got[i], want) {
			t.Errorf("MultiGet[%d] (%q) = %q, want %q (%v)", i, k, got[i], want, err)
		}
	}
	if got[3] == nil || len(got[3]) != 0 || got[2] != nil || got[7] != nil {
		t.Fatalf("empty value %#v, missing %#v and deleted %#v", got[3], got[2], got[7])
	}
	// Each value's capacity ends at its value: appending to one does not
	// overwrite the next.
	_ = append(got[0], "!!!!"...)
	if string(got[1]) != "in the memtable" {
		t.Fatalf("append to one value changed the next: %q", got[1])
	}
	if none, err := db.MultiGet(nil); err != nil || len(none) != 0 {
		t.Fatalf("MultiGet of no keys: %v, %v", none, err)
	}
	db.Close()
	if _, err := db.MultiGet(keys); !errors.Is(err, ErrClosed) {
		t.Fatalf("MultiGet after Close: %v", err)
	}
	if _, err := db.MultiGet(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("MultiGet of no keys after Close: %v", err)
	}
}

func TestMultiGetEach(t *testing.T) {
	db := openTest(t)
	const n = 2000
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = []byte(fmt.Sprintf("e%05d", i))
		if i%3 == 0 {
			continue // missing
		}
		if err := db.Put(keys[i], []byte(fmt.Sprintf("value-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := make([]int, n)
	err := db.MultiGetEach(keys, 16, func(i int, v []byte) bool {
		seen[i]++
		want := fmt.Sprintf("value-%d", i)
		if i%3 == 0 && v != nil || i%3 != 0 && string(v) != want {
			t.Errorf("key %d: %q", i, v)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("key %d answered %d times", i, c)
		}
	}
	// The empty value is empty and non-nil; false ends the call; fn may read
	// the database.
	calls := 0
	err = db.MultiGetEach([][]byte{[]byte("empty"), keys[1], keys[2]}, 2, func(i int, v []byte) bool {
		calls++
		if i == 0 && (v == nil || len(v) != 0) {
			t.Errorf("empty value: %#v", v)
		}
		if got, err := db.Get(keys[1]); err != nil || string(got) != "value-1" {
			t.Errorf("Get inside the callback: %q, %v", got, err)
		}
		return false
	})
	if err != nil || calls != 1 {
		t.Fatalf("stopped call: %d calls, %v", calls, err)
	}
	if err := db.MultiGetEach(keys, 0, func(int, []byte) bool { return true }); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("0 reads in flight: %v", err)
	}
	// A panic of fn comes back out of MultiGetEach.
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		_ = db.MultiGetEach(keys, 4, func(int, []byte) bool { panic("boom") })
		t.Fatal("no panic")
	}()
	// The database is still usable after that.
	if v, err := db.Get(keys[2]); err != nil || string(v) != "value-2" {
		t.Fatalf("Get after the panic: %q, %v", v, err)
	}
	db.Close()
	if err := db.MultiGetEach(keys, 4, func(int, []byte) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// present returns the keys of want that db has, as one string.
func present(t *testing.T, db *DB, keys ...string) string {
	t.Helper()
	var out []string
	for _, k := range keys {
		ok, err := db.Has([]byte(k))
		if err != nil {
			t.Fatalf("Has(%q): %v", k, err)
		}
		if ok {
			out = append(out, k)
		}
	}
	return fmt.Sprint(out)
}

func TestDeleteRange(t *testing.T) {
	db := openTest(t)
	all := []string{"", "a", "b", "b1", "c", "d", "\xff"}
	for _, k := range all {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	// [start, end): the start is deleted, the end kept.
	if err := db.DeleteRange([]byte("b"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	if got := present(t, db, all...); got != fmt.Sprint([]string{"", "a", "d", "\xff"}) {
		t.Fatalf("after DeleteRange(b, d): %q", got)
	}
	it, err := db.NewIterator(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(it, true); fmt.Sprint(got) != fmt.Sprint([]string{"", "a", "d", "\xff"}) {
		t.Fatalf("iterated after DeleteRange(b, d): %q", got)
	}
	it.Close()
	// A snapshot taken before sees the keys; a key written after is kept.
	if v, err := snap.Get([]byte("b1")); err != nil || string(v) != "v" {
		t.Fatalf("snapshot Get(b1) = %q, %v", v, err)
	}
	if err := db.Put([]byte("c"), []byte("again")); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("c")); err != nil || string(v) != "again" {
		t.Fatalf("Get(c) after a put past the range deletion = %q, %v", v, err)
	}
	// An empty range does nothing; a reversed one is refused and deletes
	// nothing, with a message naming the range.
	if err := db.DeleteRange([]byte("c"), []byte("c")); err != nil {
		t.Fatalf("empty range: %v", err)
	}
	if err := db.DeleteRange(nil, nil); err != nil {
		t.Fatalf("empty range at the empty key: %v", err)
	}
	var e *Error
	err = db.DeleteRange([]byte("d"), []byte("a"))
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || !strings.Contains(e.Message, "[d, a)") {
		t.Fatalf("reversed range: %v", err)
	}
	if got := present(t, db, all...); got != fmt.Sprint([]string{"", "a", "c", "d", "\xff"}) {
		t.Fatalf("after the refused ranges: %q", got)
	}
	// nil start is the empty key, the smallest: [nil, b) deletes it and "a".
	if err := db.DeleteRange(nil, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if got := present(t, db, all...); got != fmt.Sprint([]string{"c", "d", "\xff"}) {
		t.Fatalf("after DeleteRange(nil, b): %q", got)
	}
}

func TestDeleteRangeDurable(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{WriteBufferSize: 1 << 20, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k0100"), []byte("k0900")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIterator(&IterOptions{Prefix: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	keys := keysOf(it, true)
	if len(keys) != 200 || keys[99] != "k0099" || keys[100] != "k0900" {
		t.Fatalf("after reopen and compaction: %d keys, around the range %q", len(keys), keys[98:102])
	}
}

func TestBatchDeleteRange(t *testing.T) {
	db := openTest(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	b := NewBatch()
	defer b.Close()
	// In order with the other writes: a put before the range deletion is
	// deleted by it, a put after it is kept.
	steps := []func() error{
		func() error { return b.Put([]byte("a1"), []byte("before")) },
		func() error { return b.DeleteRange([]byte("a"), []byte("c")) },
		func() error { return b.Put([]byte("a2"), []byte("after")) },
		func() error { return b.DeleteRange([]byte("x"), []byte("x")) }, // empty: nothing added
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	// A reversed range is refused, adds nothing, and the batch stays usable.
	if err := b.DeleteRange([]byte("c"), []byte("a")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("reversed range: %v", err)
	}
	if b.Len() != 3 {
		t.Fatalf("Len after a refused range = %d, want 3", b.Len())
	}
	if got := present(t, db, "a", "b"); got != "[a b]" {
		t.Fatalf("visible before Write: %s", got)
	}
	if err := b.Write(db, false); err != nil {
		t.Fatal(err)
	}
	if got := present(t, db, "a", "a1", "a2", "b", "c", "d"); got != "[a2 c d]" {
		t.Fatalf("after Write: %s", got)
	}
	b.Close()
	if err := b.DeleteRange([]byte("a"), []byte("b")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteRange on a closed batch: %v", err)
	}
}

func TestBatch(t *testing.T) {
	db := openTest(t)
	b := NewBatch()
	defer b.Close()
	for i := 0; i < 10; i++ {
		if err := b.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete([]byte("k3")); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 11 || b.Size() < 11*4 {
		t.Fatalf("Len %d Size %d", b.Len(), b.Size())
	}
	if ok, _ := db.Has([]byte("k1")); ok {
		t.Fatal("visible before Write")
	}
	if err := b.Write(db, true); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.Has([]byte("k1")); !ok {
		t.Fatal("not visible after Write")
	}
	if ok, _ := db.Has([]byte("k3")); ok {
		t.Fatal("deleted key visible")
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatalf("Len after Reset: %d", b.Len())
	}
	b.Close()
	b.Close()
	if err := b.Put([]byte("k"), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Put on a closed batch: %v", err)
	}
}

func keysOf(it *Iterator, forward bool) []string {
	var out []string
	ok := it.First()
	if !forward {
		ok = it.Last()
	}
	for ; ok; ok = map[bool]func() bool{true: it.Next, false: it.Prev}[forward]() {
		out = append(out, string(it.Key()))
	}
	return out
}

func TestIterators(t *testing.T) {
	db := openTest(t)
	for _, k := range []string{"a", "b1", "b2", "b3", "c", "\xff\xff"} {
		if err := db.Put([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		opts *IterOptions
		want string
	}{
		{nil, "a b1 b2 b3 c \xff\xff"},
		{&IterOptions{Prefix: []byte("b")}, "b1 b2 b3"},
		{&IterOptions{Prefix: []byte("b"), LowerBound: []byte("b2")}, "b2 b3"},
		{&IterOptions{LowerBound: []byte("b"), UpperBound: []byte("c")}, "b1 b2 b3"},
		{&IterOptions{Prefix: []byte("\xff")}, "\xff\xff"},
		{&IterOptions{UpperBound: []byte{}}, ""},
	}
	for _, c := range cases {
		it, err := db.NewIterator(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		fw := fmt.Sprint(keysOf(it, true))
		bw := keysOf(it, false)
		for i, j := 0, len(bw)-1; i < j; i, j = i+1, j-1 {
			bw[i], bw[j] = bw[j], bw[i]
		}
		want := fmt.Sprint(bytes.Fields([]byte(c.want)))
		if fw != fmt.Sprint(toStrings(c.want)) || fmt.Sprint(bw) != fw {
			t.Errorf("%+v: forward %s backward (reversed) %v, want %s", c.opts, fw, bw, want)
		}
		if it.Error() != nil {
			t.Fatal(it.Error())
		}
		it.Close()
	}
	it, _ := db.NewIterator(nil)
	defer it.Close()
	if !it.Seek([]byte("b15")) || string(it.Key()) != "b2" || string(it.Value()) != "vb2" {
		t.Fatalf("Seek: %q %q", it.Key(), it.Value())
	}
	if !it.SeekForPrev([]byte("b15")) || string(it.Key()) != "b1" {
		t.Fatalf("SeekForPrev: %q", it.Key())
	}
	if it.Seek([]byte("\xff\xff\xff")) || it.Valid() || it.Key() != nil {
		t.Fatal("Seek past the end is valid")
	}
	it.Close()
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("First on a closed iterator: %v", it.Error())
	}
}

func toStrings(s string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}

func TestSnapshots(t *testing.T) {
	db := openTest(t)
	db.Put([]byte("k"), []byte("old"))
	s, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	db.Put([]byte("k"), []byte("new"))
	db.Put([]byte("k2"), []byte("new"))
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "old" {
		t.Fatalf("snapshot Get: %q, %v", v, err)
	}
	if ok, err := s.Has([]byte("k2")); err != nil || ok {
		t.Fatalf("snapshot Has of a later key: %v, %v", ok, err)
	}
	if _, err := s.Get([]byte("k2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("snapshot Get of a later key: %v", err)
	}
	it, err := s.NewIterator(&IterOptions{Prefix: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(it, true); fmt.Sprint(got) != "[k]" || string(it.Value()) != "" {
		t.Fatalf("snapshot iterator: %v", got)
	}
	it.First()
	if string(it.Value()) != "old" {
		t.Fatalf("snapshot iterator value %q", it.Value())
	}
	it.Close()
	s.Release()
	s.Release()
	if _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get on a released snapshot: %v", err)
	}
}

func TestClose(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v", err)
	}
	db.Put([]byte("k"), []byte("v"))
	s, _ := db.NewSnapshot()
	it, _ := db.NewIterator(nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Put":         db.Put([]byte("k"), nil),
		"Delete":      db.Delete([]byte("k")),
		"DeleteRange": db.DeleteRange([]byte("a"), []byte("z")),
		"Flush":       db.Flush(),
		"Sync":        db.Sync(),
		"Compact":     db.Compact(nil, nil),
		"Write":       NewBatch().Write(db, false),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := db.Metrics(); !errors.Is(err, ErrClosed) {
		t.Errorf("Metrics after Close: %v", err)
	}
	if _, err := db.Stat(); !errors.Is(err, ErrClosed) {
		t.Errorf("Stat after Close: %v", err)
	}
	if _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Errorf("snapshot Get after Close: %v", err)
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Errorf("iterator after Close: %v", it.Error())
	}
	it.Close()
	s.Release()
	// Read-only reopen: reads work, writes fail.
	ro, err := OpenReadOnly(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, err := ro.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("read-only Get: %q, %v", v, err)
	}
	if err := ro.Put([]byte("k"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Put: %v", err)
	}
	if err := ro.DeleteRange([]byte("a"), []byte("z")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only DeleteRange: %v", err)
	}
	if err := ro.Sync(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Sync: %v", err)
	}
	if v, err := ro.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("read-only Get after a refused DeleteRange: %q, %v", v, err)
	}
	if _, err := Open(t.TempDir()+"/none", &Options{ErrorIfMissing: true}); !errors.Is(err, ErrNotADatabase) {
		t.Fatalf("Open of a missing database with ErrorIfMissing: %v", err)
	}
	if _, err := Open(t.TempDir(), &Options{Filter: FilterKind(42)}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Open with a bad filter kind: %v", err)
	}
}

func TestMaintenanceAndMetrics(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{Filter: FilterBloom, BitsPerKey: 10, MaxOpenFiles: 100, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 2000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact([]byte("key00100"), []byte("key00200")); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	db.Get([]byte("key00042"))
	m, err := db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.Gets == 0 || m.Flushes == 0 || m.Compactions == 0 || m.WALSyncs == 0 {
		t.Fatalf("metrics %+v", m)
	}
	s, err := db.Stat()
	if err != nil || len(s) < 100 {
		t.Fatalf("Stat: %q, %v", s, err)
	}
}

// Sync syncs the write-ahead log and flushes nothing: no table is written,
// and what was written before it is there after the process is killed
// without closing the database (read back from the log alone). The child
// process is this test binary, run again with SHALE_SYNC_CHILD set.
func TestSyncWithoutFlush(t *testing.T) {
	if dir := os.Getenv("SHALE_SYNC_CHILD"); dir != "" {
		syncThenDie(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSyncWithoutFlush$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SHALE_SYNC_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "synced, no table") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by %v, not killed\n%s", err, out)
	}
	if tables, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(tables) != 0 {
		t.Fatalf("Sync wrote tables: %v", tables)
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 100; i++ {
		k := []byte(fmt.Sprintf("key%03d", i))
		if v, err := db.Get(k); err != nil || !bytes.Equal(v, k) {
			t.Fatalf("after the kill, Get(%s) = %q, %v", k, v, err)
		}
	}
}

// syncThenDie writes 100 keys in dir, syncs, checks that no table was
// written, says so on stdout and kills its own process (no Close).
func syncThenDie(dir string) {
	fail := func(err error) {
		fmt.Println("child:", err)
		os.Exit(2)
	}
	db, err := Open(dir, nil)
	if err != nil {
		fail(err)
	}
	before, err := db.Metrics()
	if err != nil {
		fail(err)
	}
	for i := 0; i < 100; i++ {
		k := []byte(fmt.Sprintf("key%03d", i))
		if err := db.Put(k, k); err != nil {
			fail(err)
		}
	}
	if err := db.Sync(); err != nil {
		fail(err)
	}
	m, err := db.Metrics()
	if err != nil {
		fail(err)
	}
	if m.Flushes != before.Flushes || m.L0Files != 0 || m.BytesWrittenTables != before.BytesWrittenTables || m.WALSyncs != before.WALSyncs+1 {
		fail(fmt.Errorf("after Sync: %+v (before: %+v); want one WAL sync and no flush", m, before))
	}
	fmt.Println("synced, no table")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// Many goroutines on one database (run with -race).
func TestConcurrentUse(t *testing.T) {
	db := openTest(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				k := []byte(fmt.Sprintf("g%d-%d", g, i))
				if err := db.Put(k, k); err != nil {
					errs <- err
					return
				}
				if v, err := db.Get(k); err != nil || !bytes.Equal(v, k) {
					errs <- fmt.Errorf("Get(%s) = %q, %v", k, v, err)
					return
				}
				if vs, err := db.MultiGet([][]byte{k, []byte("nope")}); err != nil || !bytes.Equal(vs[0], k) || vs[1] != nil {
					errs <- fmt.Errorf("MultiGet(%s) = %q, %v", k, vs, err)
					return
				}
			}
			it, err := db.NewIterator(&IterOptions{Prefix: []byte(fmt.Sprintf("g%d-", g))})
			if err != nil {
				errs <- err
				return
			}
			defer it.Close()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if n != 300 {
				errs <- fmt.Errorf("goroutine %d iterated %d keys", g, n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCodeNames(t *testing.T) {
	if CodeClosed.String() != "SHALE_CLOSED" || Code(99).String() != "SHALE_UNKNOWN" {
		t.Fatal(CodeClosed.String(), Code(99).String())
	}
	if ErrClosed.Error() != "shale: SHALE_CLOSED" {
		t.Fatal(ErrClosed.Error())
	}
}

// Range deletions mixed with puts, deletes, batches, snapshots, flushes,
// compactions and reopens, against a map: every state read back by Get and
// by a full scan must match it.
func TestDeleteRangeModel(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{WriteBufferSize: 64 << 10}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprintf("k%03d", rng.IntN(300)) }
	deleteRange := func(m map[string]string, s, e string) {
		for k := range m {
			if k >= s && k < e {
				delete(m, k)
			}
		}
	}
	check := func(step int) {
		t.Helper()
		it, err := db.NewIterator(nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for ok := it.First(); ok; ok = it.Next() {
			got[string(it.Key())] = string(it.Value())
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if len(got) != len(model) {
			t.Fatalf("step %d: scan has %d keys, model %d", step, len(got), len(model))
		}
		for k, v := range model {
			if got[k] != v {
				t.Fatalf("step %d: scan %q = %q, model %q", step, k, got[k], v)
			}
			if g, err := db.Get([]byte(k)); err != nil || string(g) != v {
				t.Fatalf("step %d: Get(%q) = %q, %v; model %q", step, k, g, err, v)
			}
		}
	}
	for step := 0; step < 3000; step++ {
		switch r := rng.IntN(100); {
		case r < 50:
			k, v := key(), fmt.Sprintf("v%d-%s", step, bytes.Repeat([]byte("x"), rng.IntN(100)))
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		case r < 60:
			k := key()
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
		case r < 75:
			s, e := key(), key()
			if s > e {
				s, e = e, s
			}
			if err := db.DeleteRange([]byte(s), []byte(e)); err != nil {
				t.Fatal(err)
			}
			deleteRange(model, s, e)
		case r < 85:
			// A batch of puts and range deletions, applied in order.
			b := NewBatch()
			next := map[string]string{}
			for k, v := range model {
				next[k] = v
			}
			for i := 0; i < 5; i++ {
				if rng.IntN(2) == 0 {
					k, v := key(), fmt.Sprintf("b%d-%d", step, i)
					b.Put([]byte(k), []byte(v))
					next[k] = v
				} else {
					s, e := key(), key()
					if s > e {
						s, e = e, s
					}
					b.DeleteRange([]byte(s), []byte(e))
					deleteRange(next, s, e)
				}
			}
			if err := b.Write(db, false); err != nil {
				t.Fatal(err)
			}
			b.Close()
			model = next
		case r < 90:
			// A snapshot keeps its state through a range deletion.
			snap, err := db.NewSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			before := map[string]string{}
			for k, v := range model {
				before[k] = v
			}
			if err := db.DeleteRange([]byte("k000"), []byte("k150")); err != nil {
				t.Fatal(err)
			}
			deleteRange(model, "k000", "k150")
			for k, v := range before {
				if g, err := snap.Get([]byte(k)); err != nil || string(g) != v {
					t.Fatalf("step %d: snapshot Get(%q) = %q, %v; want %q", step, k, g, err, v)
				}
			}
			snap.Release()
		case r < 94:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 97:
			s, e := key(), key()
			if s > e {
				s, e = e, s
			}
			if err := db.Compact([]byte(s), []byte(e)); err != nil {
				t.Fatal(err)
			}
		default:
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
		}
		if step%50 == 0 {
			check(step)
		}
	}
	check(3000)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	check(3001)
}

// The engine's tuning options reach it: a database opens, flushes, compacts
// and reads with them set (with each table metadata placement), and a value
// the engine refuses fails Open with ErrInvalidArgument and a message naming
// it.
func TestEngineOptions(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{
		WriteBufferSize:          64 << 10,
		MaxSubcompactions:        4,
		DelayedWriteRate:         8 << 20,
		CompactionRateLimit:      64 << 20,
		CompactionReadaheadBytes: 256 << 10,
		TableMetadata:            TableMetadataAllButLast,
		NoMemtableFilter:         true,
		CompactionNice:           10,
		L0CompactionTrigger:      2,
		L0SlowdownWritesTrigger:  3,
		L0StopWritesTrigger:      4,
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("key%05d", i)), []byte("value-padding-padding-padding")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []TableMetadata{TableMetadataNone, TableMetadataIndex, TableMetadataAllButLast, TableMetadataAll} {
		// Block-by-block compaction reads and only one L0 trigger set (the
		// others keep their defaults).
		db, err := Open(dir, &Options{TableMetadata: p, CompactionReadaheadBytes: -1, L0CompactionTrigger: 4})
		if err != nil {
			t.Fatalf("Open with table metadata %d: %v", p, err)
		}
		if v, err := db.Get([]byte("key01234")); err != nil || string(v) != "value-padding-padding-padding" {
			t.Fatalf("table metadata %d: Get: %q, %v", p, v, err)
		}
		if _, err := db.Get([]byte("key99999")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("table metadata %d: Get of a missing key: %v", p, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{MaxSubcompactions: 65}, "max subcompactions 65 is not within 1 to 64"},
		{Options{MaxSubcompactions: -1}, "MaxSubcompactions -1 is negative"},
		{Options{CompactionReadaheadBytes: 64<<20 + 1}, "compaction readahead 67108865 bytes"},
		{Options{TableMetadata: TableMetadata(7)}, "unknown table metadata placement 7"},
		{Options{CompactionNice: 20}, "compaction nice value 20 is not within 0 to 19"},
		{Options{CompactionNice: -3}, "compaction nice value -3 is not within 0 to 19"},
		{Options{L0CompactionTrigger: 30}, "L0 triggers 30, 20, 36 do not satisfy"},
		{Options{L0SlowdownWritesTrigger: 8, L0StopWritesTrigger: 7}, "L0 triggers 0, 8, 7 do not satisfy"},
		{Options{L0StopWritesTrigger: -2}, "L0StopWritesTrigger -2 is negative"},
	} {
		_, err := Open(t.TempDir(), &c.opts)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open with %+v: %v, want ErrInvalidArgument naming %q", c.opts, err, c.want)
		}
	}
}
