package main

// YCSB's core workloads A-F, generated exactly as crates/shale-workload's
// ycsb module generates them (keys, record values, operation sequences),
// checked against peers/testdata/ycsb-vectors.json by ycsb_test.go. The
// definitions are the Rust module's documentation and docs/bench-ycsb.md.
//
// Concurrency: a ycsbShared is shared by a run's goroutines (atomics and a
// mutex); each goroutine owns its ycsbGenerator.

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
)

const (
	zipfianConstant    = 0.99
	scrambledItemCount = 10_000_000_000
	scrambledZetan     = 26.46902820178302
	maxScanLength      = 100
	fnvOffsetBasis64   = 0xCBF29CE484222325
	fnvPrime64         = 1099511628211
)

// fnv64 is YCSB's Utils.fnvhash64: FNV-1a over the 8 little-endian bytes of
// v, then the absolute value as a signed 64-bit integer (2^63 for MinInt64).
func fnv64(v uint64) uint64 {
	h := uint64(fnvOffsetBasis64)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime64
		v >>= 8
	}
	if h>>63 != 0 {
		return ^h + 1
	}
	return h
}

// ycsbKey appends the key of record keynum ("user" + decimal fnv64) to
// out[:0].
func ycsbKey(keynum uint64, out []byte) []byte {
	return strconv.AppendUint(append(out[:0], "user"...), fnv64(keynum), 10)
}

// ycsbValues are the record values of a run: FieldCount fields of
// FieldLength bytes.
type ycsbValues struct {
	FieldCount, FieldLength, Seed uint64
}

func (v ycsbValues) recordLen() int { return int(v.FieldCount * v.FieldLength) }

// fillField fills out with the stream of field `field` of record keynum at
// version: state = mix64(seed ^ mix64(keynum) ^ mix64((version << 16) +
// field + 1)), then per 8-byte chunk state += gamma, mix64(state)
// little-endian.
func (v ycsbValues) fillField(keynum, field, version uint64, out []byte) {
	salt := (version << 16) + field + 1
	state := mix64(v.Seed ^ mix64(keynum) ^ mix64(salt))
	for off := 0; off < len(out); off += 8 {
		state += gamma
		x := mix64(state)
		for b := 0; b < 8 && off+b < len(out); b++ {
			out[off+b] = byte(x >> (8 * b))
		}
	}
}

// record fills out (resized) with record keynum as loaded (version 0).
func (v ycsbValues) record(keynum uint64, out []byte) []byte {
	n := v.recordLen()
	if cap(out) < n {
		out = make([]byte, n)
	}
	out = out[:n]
	for j := uint64(0); j < v.FieldCount; j++ {
		v.fillField(keynum, j, 0, out[j*v.FieldLength:(j+1)*v.FieldLength])
	}
	return out
}

// updateField replaces one field of a whole record; false if the record's
// length or the field is wrong.
func (v ycsbValues) updateField(keynum, field, version uint64, rec []byte) bool {
	if len(rec) != v.recordLen() || field >= v.FieldCount {
		return false
	}
	v.fillField(keynum, field, version, rec[field*v.FieldLength:(field+1)*v.FieldLength])
	return true
}

// rng is splitmix64, as shale_workload::Rng.
type rng struct{ state uint64 }

func newRng(seed uint64) rng { return rng{state: mix64(seed)} }

func (r *rng) nextU64() uint64 {
	r.state += gamma
	return mix64(r.state)
}

func (r *rng) nextF64() float64 {
	return float64(r.nextU64()>>11) * (1.0 / float64(uint64(1)<<53))
}

// below is uniform in [0, m), unbiased (multiply and reject); 0 for m = 0
// without drawing.
func (r *rng) below(m uint64) uint64 {
	if m == 0 {
		return 0
	}
	hi, lo := bits.Mul64(r.nextU64(), m)
	if lo < m {
		threshold := (0 - m) % m
		for lo < threshold {
			hi, lo = bits.Mul64(r.nextU64(), m)
		}
	}
	return hi
}

func zetaExtend(fromN uint64, fromSum float64, n uint64, theta float64) float64 {
	sum := fromSum
	for i := fromN; i < n; i++ {
		sum += 1.0 / math.Pow(float64(i+1), theta)
	}
	return sum
}

func zeta(n uint64, theta float64) float64 { return zetaExtend(0, 0, n, theta) }

// zipfian is Gray et al.'s generator as YCSB runs it.
type zipfian struct {
	items                           uint64
	theta, alpha, zetan, zeta2, eta float64
}

func newZipfian(items uint64, theta, zetan float64) zipfian {
	z := zipfian{items: items, theta: theta, alpha: 1 / (1 - theta), zetan: zetan, zeta2: zeta(2, theta)}
	z.eta = z.etaFor(items, zetan)
	return z
}

func scrambledZipfian() zipfian {
	return newZipfian(scrambledItemCount+1, zipfianConstant, scrambledZetan)
}

func (z *zipfian) etaFor(items uint64, zetan float64) float64 {
	return (1 - math.Pow(2/float64(items), 1-z.theta)) / (1 - z.zeta2/zetan)
}

func (z *zipfian) growTo(items uint64) {
	if items > z.items {
		z.zetan = zetaExtend(z.items, z.zetan, items, z.theta)
		z.items = items
		z.eta = z.etaFor(items, z.zetan)
	}
}

func (z *zipfian) sample(r *rng) uint64 {
	u := r.nextF64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return 1
	}
	x := float64(z.items) * math.Pow(z.eta*u-z.eta+1, z.alpha)
	// As Rust's saturating `as u64`: NaN and negatives to 0.
	var k uint64
	switch {
	case !(x >= 0):
		k = 0
	case x >= 18446744073709551616.0:
		k = math.MaxUint64
	default:
		k = uint64(x)
	}
	top := uint64(0)
	if z.items > 0 {
		top = z.items - 1
	}
	return min(k, top)
}

// ycsbKind is an operation's kind, in YCSB's order.
type ycsbKind int

const (
	kindRead ycsbKind = iota
	kindUpdate
	kindInsert
	kindScan
	kindReadModifyWrite
	numYcsbKinds
)

var kindNames = [numYcsbKinds]string{"read", "update", "insert", "scan", "read-modify-write"}

type ycsbDist int

const (
	distZipfian ycsbDist = iota
	distLatest
	distUniform
)

// ycsbSpec is a workload's proportions (in ycsbKind order) and request
// distribution.
type ycsbSpec struct {
	p    [numYcsbKinds]float64
	dist ycsbDist
}

// workloadSpec returns the spec of workload a..f.
func workloadSpec(w string) (ycsbSpec, error) {
	var s ycsbSpec
	switch w {
	case "a":
		s.p[kindRead], s.p[kindUpdate] = 0.5, 0.5
	case "b":
		s.p[kindRead], s.p[kindUpdate] = 0.95, 0.05
	case "c":
		s.p[kindRead] = 1
	case "d":
		s.p[kindRead], s.p[kindInsert], s.dist = 0.95, 0.05, distLatest
	case "e":
		s.p[kindScan], s.p[kindInsert] = 0.95, 0.05
	case "f":
		s.p[kindRead], s.p[kindReadModifyWrite] = 0.5, 0.5
	default:
		return s, fmt.Errorf("unknown YCSB workload %q (expected one of a, b, c, d, e, f)", w)
	}
	return s, nil
}

// ycsbOp is one operation.
type ycsbOp struct {
	kind                           ycsbKind
	keynum, field, version, length uint64
}

// ycsbShared is what the goroutines of one run share (Rust's Shared).
type ycsbShared struct {
	spec          ycsbSpec
	records       uint64
	scrambleRange uint64
	nextInsert    atomic.Uint64
	acknowledged  atomic.Uint64
	mu            sync.Mutex
	pending       map[uint64]bool
	latest        *zipfian
}

func newYcsbShared(spec ycsbSpec, records, present, operations uint64) *ycsbShared {
	present = max(present, records)
	expectedNew := uint64(float64(operations) * spec.p[kindInsert] * 2.0)
	s := &ycsbShared{spec: spec, records: records, scrambleRange: records + expectedNew + 1, pending: map[uint64]bool{}}
	s.nextInsert.Store(present)
	s.acknowledged.Store(present)
	if spec.dist == distLatest {
		items := uint64(2)
		if present > 3 {
			items = present - 1
		}
		z := newZipfian(items, zipfianConstant, zeta(items, zipfianConstant))
		s.latest = &z
	}
	return s
}

// takeInsert hands out the next key number to insert.
func (s *ycsbShared) takeInsert() uint64 { return s.nextInsert.Add(1) - 1 }

// acknowledge marks record keynum (from takeInsert) as written.
func (s *ycsbShared) acknowledge(keynum uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[keynum] = true
	limit := s.acknowledged.Load()
	for s.pending[limit] {
		delete(s.pending, limit)
		limit++
	}
	s.acknowledged.Store(limit)
}

// last is the highest key number all of whose predecessors are written.
func (s *ycsbShared) last() uint64 {
	a := s.acknowledged.Load()
	if a == 0 {
		return 0
	}
	return a - 1
}

// ycsbGenerator is one goroutine's generator, seeded with seed + thread.
type ycsbGenerator struct {
	shared     *ycsbShared
	rng        rng
	scrambled  zipfian
	latest     *zipfian
	fieldCount uint64
}

func newYcsbGenerator(shared *ycsbShared, seed, thread, fieldCount uint64) *ycsbGenerator {
	g := &ycsbGenerator{shared: shared, rng: newRng(seed + thread), scrambled: scrambledZipfian(), fieldCount: max(fieldCount, 1)}
	if shared.latest != nil {
		z := *shared.latest
		g.latest = &z
	}
	return g
}

func (g *ycsbGenerator) nextKind() ycsbKind {
	total := 0.0
	for _, p := range g.shared.spec.p {
		total += p
	}
	u := g.rng.nextF64() * total
	last := kindRead
	for k, p := range g.shared.spec.p {
		if p <= 0 {
			continue
		}
		if u < p {
			return ycsbKind(k)
		}
		u -= p
		last = ycsbKind(k)
	}
	return last
}

// nextKeynum is the record of the next read, update, scan or
// read-modify-write.
func (g *ycsbGenerator) nextKeynum() uint64 {
	s := g.shared
	switch s.spec.dist {
	case distUniform:
		return g.rng.below(max(s.records, 1))
	case distLatest:
		last := s.last()
		if g.latest != nil && last >= 2 {
			g.latest.growTo(last)
			return last - min(g.latest.sample(&g.rng), last)
		}
		return last
	default:
		last := s.last()
		for {
			k := fnv64(g.scrambled.sample(&g.rng)) % s.scrambleRange
			if k <= last {
				return k
			}
		}
	}
}

func (g *ycsbGenerator) nextOp() ycsbOp {
	op := ycsbOp{kind: g.nextKind()}
	switch op.kind {
	case kindRead:
		op.keynum = g.nextKeynum()
	case kindUpdate, kindReadModifyWrite:
		op.keynum = g.nextKeynum()
		op.field = g.rng.below(g.fieldCount)
		op.version = max(g.rng.nextU64(), 1) // version 0 is the loaded content
	case kindInsert:
		op.keynum = g.shared.takeInsert()
	case kindScan:
		op.keynum = g.nextKeynum()
		op.length = 1 + g.rng.below(maxScanLength)
	}
	return op
}
