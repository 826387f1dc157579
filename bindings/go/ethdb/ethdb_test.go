package ethdb

import (
	"errors"
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
	if err := db.SyncKeyValue(); err != nil {
		t.Fatal(err)
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
