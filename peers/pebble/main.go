// Command shale-pebble-harness drives Pebble v1.1.5 for `shale bench
// compare`: it reads one JSON request on standard input, writes one JSON
// reply on standard output and exits 0, or writes {"error": "..."} and exits
// 1. Logs go to standard error. See docs/harness-protocol.md.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	reply, err := serve(os.Stdin)
	if err != nil {
		reply = ErrorReply{Error: strings.ReplaceAll(err.Error(), "\n", " ")}
	}
	out, merr := json.Marshal(reply)
	if merr != nil {
		out, _ = json.Marshal(ErrorReply{Error: "encode reply: " + merr.Error()})
		err = merr
	}
	os.Stdout.Write(append(out, '\n'))
	if err != nil {
		logf("error: %v", err)
		os.Exit(1)
	}
}

// serve reads one request from r and carries it out.
func serve(r io.Reader) (any, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read request: %v", err)
	}
	req, err := ParseRequest(data)
	if err != nil {
		return nil, err
	}
	return handle(req)
}

// servedOps are the ops this harness serves (info's "ops"): all of them.
var servedOps = []string{"info", "load", "inspect", "read", "dbbench", "ycsb"}

// checkServed fails, naming the op, unless served lists it.
func checkServed(op string, served []string) error {
	if !slices.Contains(served, op) {
		return fmt.Errorf("op %s is not served by the %s harness (it serves %s)", op, engineName, strings.Join(served, ", "))
	}
	return nil
}

// checkConfig fails unless config is one this harness knows.
func checkConfig(config string) error {
	if !slices.Contains(configs, config) {
		return fmt.Errorf("unknown config %q (this harness knows %q)", config, configs)
	}
	return nil
}

// handle carries out a parsed request and returns its reply.
func handle(req *Request) (any, error) {
	if err := checkServed(req.Op, servedOps); err != nil {
		return nil, err
	}
	switch req.Op {
	case "info":
		return InfoReply{Engine: engineName, Version: engineVersion, Configs: configs, DirectIO: false, Ops: servedOps}, nil
	case "ycsb":
		return ycsb(req)
	}
	if err := checkConfig(req.Config); err != nil {
		return nil, err
	}
	if req.Op == "dbbench" {
		return dbbench(req)
	}
	ds, err := NewDataset(*req.Dataset)
	if err != nil {
		return nil, err
	}
	switch req.Op {
	case "load":
		return load(req, ds)
	case "inspect":
		return inspect(req, ds)
	default: // "read", checked by ParseRequest
		if req.DirectIO {
			logf("read: direct_io requested, but Pebble cannot read with O_DIRECT; reading through the page cache")
		}
		return read(req, ds)
	}
}

// logf writes one line to standard error.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "shale-pebble-harness: "+format+"\n", args...)
}

// readIndices reads a file of little-endian u64 key indices.
func readIndices(path string) ([]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data)%8 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of 8-byte indices", path, len(data))
	}
	out := make([]uint64, len(data)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(data[8*i:])
	}
	return out, nil
}

// procField returns the first number after "name:" in a /proc file.
func procField(path, name string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), name+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		return strconv.ParseUint(fields[0], 10, 64)
	}
	return 0, fmt.Errorf("%s: no %s", path, name)
}

// procIOReadBytes is read_bytes of /proc/self/io: bytes the process caused
// to be read from storage.
func procIOReadBytes() (uint64, error) { return procField("/proc/self/io", "read_bytes") }

// procRSSBytes is VmRSS of /proc/self/status, in bytes.
func procRSSBytes() (uint64, error) {
	kb, err := procField("/proc/self/status", "VmRSS")
	return kb * 1024, err
}
