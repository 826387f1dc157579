package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// vectors is peers/testdata/vectors.json, shared by every harness.
type vectors struct {
	Keys []struct {
		Index  uint64 `json:"index"`
		Key    string `json:"key"`
		Scheme string `json:"scheme"`
	} `json:"keys"`
	Values []struct {
		Index     uint64 `json:"index"`
		Seed      uint64 `json:"seed"`
		Value     string `json:"value"`
		ValueSize int    `json:"value_size"`
	} `json:"values"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	data, err := os.ReadFile("../testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Keys) == 0 || len(v.Values) == 0 {
		t.Fatal("vectors.json has no keys or no values")
	}
	return v
}

func TestKeysMatchVectors(t *testing.T) {
	schemes := map[string]int{}
	for _, k := range loadVectors(t).Keys {
		ds, err := NewDataset(DatasetSpec{Keys: 1, Scheme: k.Scheme, ValueSize: 110})
		if err != nil {
			t.Fatal(err)
		}
		got := hex.EncodeToString(ds.NewKeyGen().Key(k.Index, nil))
		if got != k.Key {
			t.Errorf("%s key %d = %s, want %s", k.Scheme, k.Index, got, k.Key)
		}
		schemes[k.Scheme]++
	}
	for _, s := range []string{"hash", "hash8", "path"} {
		if schemes[s] == 0 {
			t.Errorf("no vector of scheme %s", s)
		}
	}
}

func TestValuesMatchVectors(t *testing.T) {
	for _, v := range loadVectors(t).Values {
		ds, err := NewDataset(DatasetSpec{Keys: 1, Scheme: "hash", ValueSize: v.ValueSize, Seed: v.Seed})
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(ds.Value(v.Index)); got != v.Value {
			t.Errorf("value %d (seed %d, %d bytes) = %s, want %s", v.Index, v.Seed, v.ValueSize, got, v.Value)
		}
	}
}

func TestKeyGenReusesItsBufferAndRefusesUnknownSchemes(t *testing.T) {
	ds, _ := NewDataset(DatasetSpec{Scheme: "path"})
	g := ds.NewKeyGen()
	buf := make([]byte, 0, 40)
	a := string(g.Key(17, buf))
	b := string(g.Key(17, g.Key(3, buf)))
	if a != b || len(a) < 33 || len(a) > 40 {
		t.Errorf("path key 17: %x then %x", a, b)
	}
	if _, err := NewDataset(DatasetSpec{Scheme: "trie"}); err == nil {
		t.Error("scheme trie accepted")
	}
}
