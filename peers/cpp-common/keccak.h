// Keccak-256 as Ethereum uses it: the Keccak[c=512] sponge over
// Keccak-f[1600] with the original multi-rate padding (first pad byte 0x01),
// not FIPS-202 SHA3-256 (whose domain byte is 0x06).
//
// Written from the Keccak reference (the five step mappings theta, rho, pi,
// chi, iota). The rotation offsets and round constants are derived at start-up
// from their definitions in the specification instead of being typed in as
// tables, so there is nothing to mistype.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shale {
namespace keccak_detail {

inline uint64_t rotl(uint64_t v, unsigned n) {
  n &= 63;
  return n == 0 ? v : (v << n) | (v >> (64 - n));
}

// The lane at column x, row y lives at index x + 5y.
inline int lane(int x, int y) { return x + 5 * y; }

struct Constants {
  unsigned rho[25];       // rotation offset of each lane
  uint64_t iota[24];      // round constants

  Constants() {
    // rho: offset(0,0) = 0; starting from (x,y) = (1,0), step t in 0..23
    // gives lane (x,y) the offset (t+1)(t+2)/2 mod 64, then moves to
    // (y, 2x+3y mod 5).
    rho[0] = 0;
    int x = 1, y = 0;
    for (int t = 0; t < 24; t++) {
      rho[lane(x, y)] = static_cast<unsigned>(((t + 1) * (t + 2) / 2) % 64);
      int nx = y, ny = (2 * x + 3 * y) % 5;
      x = nx;
      y = ny;
    }
    // iota: round ir sets bit 2^j - 1 (j = 0..6) to rc(j + 7 ir), where rc is
    // the output of the LFSR with polynomial x^8 + x^6 + x^5 + x^4 + 1.
    for (int ir = 0; ir < 24; ir++) {
      uint64_t c = 0;
      for (int j = 0; j <= 6; j++) {
        if (rc(j + 7 * ir)) c |= uint64_t{1} << ((1u << j) - 1);
      }
      iota[ir] = c;
    }
  }

  static bool rc(int t) {
    // R starts as 1000 0000 (R[0] = 1, bit 0 here); each step shifts towards
    // higher bits and feeds the dropped R[8] back into bits 0, 4, 5 and 6.
    unsigned r = 1;
    for (int i = 0; i < t % 255; i++) {
      r <<= 1;
      if (r & 0x100) r ^= 0x171;
    }
    return r & 1;
  }
};

inline const Constants& constants() {
  static const Constants c;
  return c;
}

// Keccak-f[1600]: 24 rounds over the 5x5 state of 64-bit lanes.
inline void permute(uint64_t a[25]) {
  const Constants& k = constants();
  for (int round = 0; round < 24; round++) {
    // theta: each lane absorbs the parities of two neighbouring columns.
    uint64_t c[5], d[5];
    for (int x = 0; x < 5; x++)
      c[x] = a[lane(x, 0)] ^ a[lane(x, 1)] ^ a[lane(x, 2)] ^ a[lane(x, 3)] ^ a[lane(x, 4)];
    for (int x = 0; x < 5; x++) d[x] = c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
    for (int i = 0; i < 25; i++) a[i] ^= d[i % 5];
    // rho (rotate each lane) and pi (move lane (x,y) to (y, 2x+3y)).
    uint64_t b[25];
    for (int x = 0; x < 5; x++)
      for (int y = 0; y < 5; y++)
        b[lane(y, (2 * x + 3 * y) % 5)] = rotl(a[lane(x, y)], k.rho[lane(x, y)]);
    // chi: the only non-linear step, along each row.
    for (int x = 0; x < 5; x++)
      for (int y = 0; y < 5; y++)
        a[lane(x, y)] = b[lane(x, y)] ^ (~b[lane((x + 1) % 5, y)] & b[lane((x + 2) % 5, y)]);
    // iota: break the symmetry between rounds.
    a[0] ^= k.iota[round];
  }
}

}  // namespace keccak_detail

// The 256-bit sponge (rate 136 bytes, capacity 512 bits, 32-byte digest)
// with `pad` as the first padding byte: 0x01 is Keccak-256, 0x06 SHA3-256
// (which the tests use to check multi-block messages against Python's
// hashlib).
inline std::array<uint8_t, 32> sponge256(const void* data, size_t n, uint8_t pad) {
  constexpr size_t kRate = 136;
  uint64_t state[25] = {0};
  const uint8_t* p = static_cast<const uint8_t*>(data);
  // XOR one byte into the state; bytes fill lanes little-endian.
  auto absorb_byte = [&](size_t pos, uint8_t v) {
    state[pos / 8] ^= uint64_t{v} << (8 * (pos % 8));
  };
  while (n >= kRate) {
    for (size_t i = 0; i < kRate; i++) absorb_byte(i, p[i]);
    keccak_detail::permute(state);
    p += kRate;
    n -= kRate;
  }
  for (size_t i = 0; i < n; i++) absorb_byte(i, p[i]);
  // pad10*1: a 1 bit right after the message (0x01; SHA3 puts its domain bits
  // 01 first, hence 0x06), and a 1 bit at the end of the block (0x80); both
  // may land in the same byte.
  absorb_byte(n, pad);
  absorb_byte(kRate - 1, 0x80);
  keccak_detail::permute(state);
  std::array<uint8_t, 32> out;
  for (size_t i = 0; i < 32; i++) out[i] = static_cast<uint8_t>(state[i / 8] >> (8 * (i % 8)));
  return out;
}

// Keccak-256 of data[0..n), Ethereum's hash (original Keccak padding).
inline std::array<uint8_t, 32> keccak256(const void* data, size_t n) { return sponge256(data, n, 0x01); }

}  // namespace shale
