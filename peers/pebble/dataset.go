package main

import (
	"encoding/binary"
	"fmt"
	"hash"

	"golang.org/x/crypto/sha3"
)

// gamma is the splitmix64 increment ("golden gamma").
const gamma uint64 = 0x9E3779B97F4A7C15

// accountSlots is the number of consecutive indices sharing one account
// prefix in the path scheme.
const accountSlots = 16

// mix64 is the splitmix64 finalizer (all arithmetic wraps on 64 bits).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Dataset generates the keys and values of a DatasetSpec, byte-identical to
// the Rust definition (crates/shale-workload). A Dataset is immutable; each
// goroutine uses its own KeyGen for keys.
type Dataset struct {
	Spec DatasetSpec
}

// NewDataset checks the spec's scheme and returns its generator.
func NewDataset(spec DatasetSpec) (*Dataset, error) {
	switch spec.Scheme {
	case "hash", "hash8", "path":
	default:
		return nil, fmt.Errorf("unknown key scheme %q (expected \"hash\", \"hash8\" or \"path\")", spec.Scheme)
	}
	return &Dataset{Spec: spec}, nil
}

// FillValue fills out (of any length) with the first len(out) bytes of value
// i's stream: state = mix64(seed ^ mix64(i)), then per 8-byte chunk
// state += gamma and the chunk is mix64(state) little-endian.
func (d *Dataset) FillValue(i uint64, out []byte) {
	state := mix64(d.Spec.Seed ^ mix64(i))
	var chunk [8]byte
	for off := 0; off < len(out); off += 8 {
		state += gamma
		binary.LittleEndian.PutUint64(chunk[:], mix64(state))
		copy(out[off:], chunk[:])
	}
}

// Value returns value i, Spec.ValueSize bytes.
func (d *Dataset) Value(i uint64) []byte {
	v := make([]byte, d.Spec.ValueSize)
	d.FillValue(i, v)
	return v
}

// KeyGen builds keys of one scheme with a reusable Keccak-256 state. It is
// not safe for concurrent use: give each goroutine its own.
type KeyGen struct {
	scheme string
	h      hash.Hash
	buf    [32]byte
}

// NewKeyGen returns a key generator for the dataset's scheme.
func (d *Dataset) NewKeyGen() *KeyGen {
	return &KeyGen{scheme: d.Spec.Scheme, h: sha3.NewLegacyKeccak256()}
}

// keccak appends keccak256(data) to out.
func (g *KeyGen) keccak(out, data []byte) []byte {
	g.h.Reset()
	g.h.Write(data)
	return g.h.Sum(out)
}

// Key appends key i to out[:0] and returns it (reusing out's storage).
func (g *KeyGen) Key(i uint64, out []byte) []byte {
	out = out[:0]
	switch g.scheme {
	case "hash":
		// i as a big-endian 256-bit word: 24 zero bytes, then be64(i).
		g.buf = [32]byte{}
		binary.BigEndian.PutUint64(g.buf[24:], i)
		return g.keccak(out, g.buf[:])
	case "hash8":
		binary.BigEndian.PutUint64(g.buf[:8], i)
		return g.keccak(out, g.buf[:8])
	default: // "path", checked by NewDataset
		var in [15]byte
		binary.BigEndian.PutUint64(in[:8], i/accountSlots)
		copy(in[8:], "account")
		out = g.keccak(out, in[:])
		h := mix64(i)
		n := 1 + int(h&7)
		var suffix [8]byte
		binary.LittleEndian.PutUint64(suffix[:], h)
		suffix[0] = byte(i%accountSlots)<<4 | byte((h>>3)&0x0F)
		return append(out, suffix[:n]...)
	}
}
