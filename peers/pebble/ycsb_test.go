package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// ycsbVectors is peers/testdata/ycsb-vectors.json (written by
// crates/shale-workload/tests/ycsb_vectors.rs).
type ycsbVectors struct {
	Keys []struct {
		Keynum uint64 `json:"keynum"`
		Key    string `json:"key"`
	} `json:"keys"`
	Records []struct {
		FieldCount    uint64 `json:"field_count"`
		FieldLength   uint64 `json:"field_length"`
		Seed          uint64 `json:"seed"`
		Keynum        uint64 `json:"keynum"`
		Record        string `json:"record"`
		UpdateField   uint64 `json:"update_field"`
		UpdateVersion uint64 `json:"update_version"`
		Updated       string `json:"updated"`
	} `json:"records"`
	Sequences []struct {
		Workload   string `json:"workload"`
		Records    uint64 `json:"records"`
		Operations uint64 `json:"operations"`
		Seed       uint64 `json:"seed"`
		Thread     uint64 `json:"thread"`
		FieldCount uint64 `json:"field_count"`
		Ops        []struct {
			Kind    string  `json:"kind"`
			Keynum  uint64  `json:"keynum"`
			Field   *uint64 `json:"field"`
			Version *uint64 `json:"version"`
			Length  *uint64 `json:"length"`
		} `json:"ops"`
	} `json:"sequences"`
}

// The Go generator reproduces the Rust one: keys, records as loaded and
// updated, and the first operations of every workload (one thread, inserts
// acknowledged at once).
func TestYcsbVectors(t *testing.T) {
	data, err := os.ReadFile("../testdata/ycsb-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v ycsbVectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if fnv64(0) != 6284781860667377211 {
		t.Errorf("fnv64(0) = %d", fnv64(0))
	}
	if len(v.Keys) == 0 || len(v.Records) == 0 || len(v.Sequences) != 6 {
		t.Fatalf("vectors: %d keys, %d records, %d sequences", len(v.Keys), len(v.Records), len(v.Sequences))
	}
	for _, k := range v.Keys {
		if got := string(ycsbKey(k.Keynum, nil)); got != k.Key {
			t.Errorf("key %d: %s, want %s", k.Keynum, got, k.Key)
		}
	}
	for _, r := range v.Records {
		vals := ycsbValues{FieldCount: r.FieldCount, FieldLength: r.FieldLength, Seed: r.Seed}
		rec := vals.record(r.Keynum, nil)
		if hex.EncodeToString(rec) != r.Record {
			t.Errorf("record %d differs", r.Keynum)
		}
		if !vals.updateField(r.Keynum, r.UpdateField, r.UpdateVersion, rec) || hex.EncodeToString(rec) != r.Updated {
			t.Errorf("updated record %d differs", r.Keynum)
		}
		if vals.updateField(r.Keynum, r.FieldCount, 1, rec) || vals.updateField(r.Keynum, 0, 1, rec[1:]) {
			t.Errorf("record %d: a field out of range or a short record was updated", r.Keynum)
		}
	}
	for _, s := range v.Sequences {
		spec, err := workloadSpec(s.Workload)
		if err != nil {
			t.Fatal(err)
		}
		shared := newYcsbShared(spec, s.Records, s.Records, s.Operations)
		g := newYcsbGenerator(shared, s.Seed, s.Thread, s.FieldCount)
		for i, want := range s.Ops {
			op := g.nextOp()
			if op.kind == kindInsert {
				shared.acknowledge(op.keynum)
			}
			if kindNames[op.kind] != want.Kind || op.keynum != want.Keynum {
				t.Fatalf("workload %s op %d: %s %d, want %s %d", s.Workload, i, kindNames[op.kind], op.keynum, want.Kind, want.Keynum)
			}
			if want.Field != nil && (op.field != *want.Field || op.version != *want.Version) {
				t.Fatalf("workload %s op %d: field %d version %d, want %d %d", s.Workload, i, op.field, op.version, *want.Field, *want.Version)
			}
			if want.Length != nil && op.length != *want.Length {
				t.Fatalf("workload %s op %d: length %d, want %d", s.Workload, i, op.length, *want.Length)
			}
		}
	}
	if _, err := workloadSpec("g"); err == nil {
		t.Error("workload g accepted")
	}
}

// Acknowledged inserts move `last` only once every earlier one is written.
func TestYcsbAcknowledgeInOrder(t *testing.T) {
	spec, _ := workloadSpec("d")
	s := newYcsbShared(spec, 10, 10, 100)
	a, b := s.takeInsert(), s.takeInsert()
	if a != 10 || b != 11 || s.last() != 9 {
		t.Fatalf("inserts %d %d, last %d", a, b, s.last())
	}
	s.acknowledge(b)
	if s.last() != 9 {
		t.Errorf("last %d with 10 in flight", s.last())
	}
	s.acknowledge(a)
	if s.last() != 11 {
		t.Errorf("last %d after both", s.last())
	}
}
