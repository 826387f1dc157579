package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const protocolDir = "../testdata/protocol"

func readFixture(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(protocolDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

type infoFields struct {
	Fields       []string `json:"fields"`
	Ops          []string `json:"ops"`
	AlwaysServed []string `json:"always_served"`
}

// Every <op>.request.json of the shared fixtures parses, and encodes back to
// the same JSON (the round trip through Request and MarshalJSON).
func TestFixtureRequestsRoundTrip(t *testing.T) {
	var fields infoFields
	readFixture(t, "info.reply-fields.json", &fields)
	if !reflect.DeepEqual(fields.Ops, Ops) {
		t.Fatalf("info.reply-fields.json lists ops %v, the harness knows %v", fields.Ops, Ops)
	}
	for _, op := range fields.Ops {
		data, err := os.ReadFile(filepath.Join(protocolDir, op+".request.json"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := ParseRequest(data)
		if err != nil {
			t.Fatalf("%s.request.json: %v", op, err)
		}
		if req.Op != op {
			t.Errorf("%s.request.json has op %q", op, req.Op)
		}
		back, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		json.Unmarshal(data, &want)
		json.Unmarshal(back, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: round trip\n got %s\nwant %s", op, back, data)
		}
	}
}

// info replies with the fixture's fields and lists the ops this harness
// serves; an op it does not serve is refused by name.
func TestInfoListsOps(t *testing.T) {
	var fields infoFields
	readFixture(t, "info.reply-fields.json", &fields)
	data, err := request(t, `{"protocol":1,"op":"info"}`)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(data, &keys)
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	want := slices.Clone(fields.Fields)
	slices.Sort(want)
	if !reflect.DeepEqual(names, want) {
		t.Errorf("info reply %s, want the fields %v", data, fields.Fields)
	}
	var info InfoReply
	json.Unmarshal(data, &info)
	if !reflect.DeepEqual(info.Ops, servedOps) || !reflect.DeepEqual(info.Ops, Ops) {
		t.Errorf("info ops %v", info.Ops)
	}
	for _, op := range fields.AlwaysServed {
		if !slices.Contains(info.Ops, op) {
			t.Errorf("info does not list %s", op)
		}
	}
	err = checkServed("ycsb", []string{"info", "load"})
	if err == nil || !strings.Contains(err.Error(), "op ycsb is not served") || !strings.Contains(err.Error(), "info, load") {
		t.Errorf("unserved op: %v", err)
	}
	if err := checkServed("ycsb", servedOps); err != nil {
		t.Error(err)
	}
}

// A ycsb request's load phase needs no workload, operations or direct_io;
// its run phase does; bad settings are refused naming the field.
func TestYcsbRequestsAreChecked(t *testing.T) {
	var base map[string]any
	readFixture(t, "ycsb.request.json", &base)
	encode := func(m map[string]any) []byte {
		data, _ := json.Marshal(m)
		return data
	}
	clone := func() map[string]any {
		var m map[string]any
		json.Unmarshal(encode(base), &m)
		return m
	}
	load := clone()
	load["phase"] = "load"
	for _, f := range ycsbRunFields {
		delete(load, f)
	}
	if _, err := ParseRequest(encode(load)); err != nil {
		t.Errorf("load without run fields: %v", err)
	}
	for _, f := range append([]string{"settings", "records", "dir"}, ycsbRunFields...) {
		bad := clone()
		delete(bad, f)
		if _, err := ParseRequest(encode(bad)); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("run without %s: %v", f, err)
		}
	}
	for field, value := range map[string]any{"phase": "warm", "field_count": 0} {
		bad := clone()
		bad[field] = value
		if _, err := ParseRequest(encode(bad)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s %v: %v", field, value, err)
		}
	}
	bad := clone()
	bad["settings"].(map[string]any)["filters"] = "fuse9"
	if _, err := ParseRequest(encode(bad)); err == nil || !strings.Contains(err.Error(), "fuse9") {
		t.Errorf("fuse9 filters: %v", err)
	}
	bad = clone()
	delete(bad["settings"].(map[string]any), "block_cache_bytes")
	if _, err := ParseRequest(encode(bad)); err == nil || !strings.Contains(err.Error(), "block_cache_bytes") {
		t.Errorf("no block_cache_bytes: %v", err)
	}
}
