package ethdb

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	gethdb "github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/dbtest"
)

func newDB(t testing.TB) *Database {
	t.Helper()
	db, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// go-ethereum's own suite for key-value stores.
func TestDatabaseSuite(t *testing.T) {
	dbtest.TestDatabaseSuite(t, func() gethdb.KeyValueStore { return newDB(t) })
}

// geth's errors: not found, and closed for everything after Close, including
// an iterator made before it.
func TestNotFoundAndClosed(t *testing.T) {
	db := newDB(t)
	if _, err := db.Get([]byte("missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil, nil)
	if !it.Next() || string(it.Key()) != "a" {
		t.Fatalf("first key %q", it.Key())
	}
	b := db.NewBatch()
	if err := b.Put([]byte("d"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if it.Next() {
		t.Fatal("Next after Close")
	}
	if !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("iterator error after Close: %v", it.Error())
	}
	it.Release()
	it.Release()
	if err := b.Write(); !errors.Is(err, ErrClosed) {
		t.Fatalf("batch Write after Close: %v", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := db.Has([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Has after Close: %v", err)
	}
	if err := db.SyncKeyValue(); !errors.Is(err, ErrClosed) {
		t.Fatalf("SyncKeyValue after Close: %v", err)
	}
	if _, err := db.Stat(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Stat after Close: %v", err)
	}
	if err := db.Compact(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact after Close: %v", err)
	}
	it = db.NewIterator([]byte("a"), nil)
	if it.Next() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("iterator made after Close: %v", it.Error())
	}
	// The files are free again: the database reopens with its data.
	again, err := New(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if v, err := again.Get([]byte("b")); err != nil || string(v) != "b" {
		t.Fatalf("after reopen: %q, %v", v, err)
	}
}

func TestStatSyncCompact(t *testing.T) {
	db := newDB(t)
	defer db.Close()
	for i := 0; i < 1000; i++ {
		if err := db.Put([]byte{byte(i >> 8), byte(i)}, []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	before, err := db.db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SyncKeyValue(); err != nil {
		t.Fatal(err)
	}
	// The log is synced; the memtable is not flushed.
	after, err := db.db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if after.WALSyncs != before.WALSyncs+1 || after.Flushes != before.Flushes || after.L0Files != before.L0Files {
		t.Fatalf("SyncKeyValue: WAL syncs %d -> %d, flushes %d -> %d, L0 tables %d -> %d; want one sync, no flush",
			before.WALSyncs, after.WALSyncs, before.Flushes, after.Flushes, before.L0Files, after.L0Files)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	s, err := db.Stat()
	if err != nil || len(s) == 0 {
		t.Fatalf("Stat: %q, %v", s, err)
	}
	if v, err := db.Get([]byte{3, 231}); err != nil || string(v) != "value" {
		t.Fatalf("after compaction: %q, %v", v, err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	db, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := New(dir, ReadOnly(), Cache(32), Handles(64))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, err := ro.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("read-only Get: %q, %v", v, err)
	}
	if err := ro.Put([]byte("k"), []byte("w")); err == nil {
		t.Fatal("Put on a read-only database succeeded")
	}
}

// DeleteRange's nil bounds as geth's pebble backend reads them: nil start is
// the smallest key (the empty key), nil end is gethdb.MaximumKey, so every key
// geth writes (all below it) goes, and MaximumKey itself stays.
func TestDeleteRangeNilBounds(t *testing.T) {
	db := newDB(t)
	defer db.Close()
	keys := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{0xff}, 31), gethdb.MaximumKey}
	for _, k := range keys {
		if err := db.Put(k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		has, err := db.Has(k)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == len(keys)-1; has != want {
			t.Errorf("key %x: has = %v, want %v", k, has, want)
		}
	}
	// A reversed range is an error and deletes nothing.
	if err := db.DeleteRange(gethdb.MaximumKey, []byte("a")); err == nil {
		t.Fatal("DeleteRange(MaximumKey, a) succeeded")
	}
	if has, err := db.Has(gethdb.MaximumKey); err != nil || !has {
		t.Fatalf("MaximumKey after a refused DeleteRange: %v, %v", has, err)
	}
}

// recorder is a replay target that notes every call.
type recorder struct{ ops []string }

func (r *recorder) Put(k, v []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("put %q=%q", k, v))
	return nil
}

func (r *recorder) Delete(k []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("delete %q", k))
	return nil
}

func (r *recorder) DeleteRange(start, end []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("deleterange %q %q", start, end))
	return nil
}

// plainWriter is a replay target without DeleteRange.
type plainWriter struct{ puts, deletes int }

func (p *plainWriter) Put(k, v []byte) error { p.puts++; return nil }
func (p *plainWriter) Delete(k []byte) error { p.deletes++; return nil }

// Replay gives back the batch's operations in order, range deletions with
// their bounds as written (a nil end as MaximumKey); a range the batch refused
// is not in it, nor counted in ValueSize.
func TestBatchReplayOrder(t *testing.T) {
	db := newDB(t)
	defer db.Close()
	b := db.NewBatch()
	defer b.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Put([]byte("k1"), []byte("v1")))
	must(b.DeleteRange([]byte("a"), []byte("c")))
	must(b.Delete([]byte("k2")))
	must(b.DeleteRange([]byte("x"), nil))
	if err := b.DeleteRange([]byte("c"), []byte("a")); err == nil {
		t.Fatal("a reversed range was accepted")
	}
	// k1 v1, a c, k2, x MaximumKey
	if got, want := b.ValueSize(), 4+2+2+1+32; got != want {
		t.Fatalf("ValueSize = %d, want %d", got, want)
	}
	var r recorder
	must(b.Replay(&r))
	want := fmt.Sprint([]string{
		`put "k1"="v1"`,
		`deleterange "a" "c"`,
		`delete "k2"`,
		fmt.Sprintf("deleterange %q %q", "x", gethdb.MaximumKey),
	})
	if got := fmt.Sprint(r.ops); got != want {
		t.Fatalf("replayed\n%s\nwant\n%s", got, want)
	}
	// A target without DeleteRange cannot take the range deletions.
	// It stops there, after the operations before.
	var p plainWriter
	if err := b.Replay(&p); err == nil || p.puts != 1 || p.deletes != 0 {
		t.Fatalf("Replay into a target without DeleteRange: %v after %d puts, %d deletes", err, p.puts, p.deletes)
	}
	// Replayed into another batch, the range deletions apply when written.
	for _, k := range []string{"a", "b", "c", "y"} {
		must(db.Put([]byte(k), []byte("v")))
	}
	into := db.NewBatch()
	defer into.Close()
	must(b.Replay(into))
	must(into.Write())
	for k, want := range map[string]bool{"a": false, "b": false, "c": true, "y": false, "k1": true} {
		if has, err := db.Has([]byte(k)); err != nil || has != want {
			t.Errorf("after the replayed batch: Has(%q) = %v, %v; want %v", k, has, err, want)
		}
	}
	// Reset empties the record too.
	b.Reset()
	r.ops = nil
	must(b.Replay(&r))
	if len(r.ops) != 0 || b.ValueSize() != 0 {
		t.Fatalf("after Reset: replayed %v, ValueSize %d", r.ops, b.ValueSize())
	}
}
