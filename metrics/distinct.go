package metrics

import (
	"hash/maphash"
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// maxFolded bounds the values a distinct counter remembers exactly.
const maxFolded = 4096

// foldBits is the size in bits of a distinct counter's bitmap past
// maxFolded values (32 KiB): its estimate stays within about 1% up to a
// few hundred thousand values.
const foldBits = 1 << 18

// distinct counts the distinct values it is given, each once however
// often it comes back, in bounded memory: exactly (by a 64-bit hash) for
// the first maxFolded values, then by linear counting over a bitmap of
// foldBits bits, an estimate that corrects for two values sharing a bit
// and only ever grows. Not safe for concurrent use.
type distinct struct {
	c     prometheus.Counter
	seed  maphash.Seed
	exact map[uint64]struct{}
	bits  []uint64 // made past maxFolded
	set   int      // bits set in bits
	added float64  // what the bitmap's estimate has added to c
}

func newDistinct(c prometheus.Counter) *distinct {
	return &distinct{c: c, seed: maphash.MakeSeed(), exact: map[uint64]struct{}{}}
}

// add counts v if it was not seen before.
func (d *distinct) add(v string) {
	h := maphash.String(d.seed, v)
	if _, ok := d.exact[h]; ok {
		return
	}
	if len(d.exact) < maxFolded {
		d.exact[h] = struct{}{}
		d.c.Inc()
		return
	}
	if d.bits == nil {
		d.bits = make([]uint64, foldBits/64)
	}
	b := h % foldBits
	if d.bits[b/64]&(1<<(b%64)) != 0 {
		return
	}
	d.bits[b/64] |= 1 << (b % 64)
	d.set++
	est := d.added + 1
	if d.set < foldBits {
		est = math.Max(est, math.Round(-foldBits*math.Log(1-float64(d.set)/foldBits)))
	}
	d.c.Add(est - d.added)
	d.added = est
}
