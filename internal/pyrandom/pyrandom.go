package pyrandom

import (
	"errors"
	"fmt"
	"math/big"
)

// MT19937 的标准参数，与 CPython Modules/_randommodule.c 相同。
const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// ErrSampleSize 表示 Sample 的 k 超出 [0, n]，对应 Python 的
// "Sample larger than population or is negative" ValueError。
var ErrSampleSize = errors.New("pyrandom: sample larger than population or is negative")

// Random 是 CPython random.Random 的逐位等价实现；零值不可用，须经 New 构造。
// 非并发安全：调用顺序决定序列，多个 goroutine 共用会破坏与 Python 的一致性。
type Random struct {
	mt  [n]uint32
	mti int
}

// New 等价于 Python 的 random.Random(seed)（seed 为 int）：取 |seed| 的
// 32 位小端分组作为 init_by_array 的 key；seed 为 0 时 key 为 [0]。
func New(seed int64) *Random {
	return NewBig(big.NewInt(seed))
}

// NewBig 与 New 相同但接受任意大小的整数，覆盖 Python 允许的大整数种子。
func NewBig(seed *big.Int) *Random {
	abs := new(big.Int).Abs(seed)
	words := abs.Bits()
	var key []uint32
	for _, w := range words {
		// big.Word 在 64 位平台为 64 位，按小端拆成两个 32 位分组。
		key = append(key, uint32(w))
		if bitsPerWord == 64 {
			key = append(key, uint32(uint64(w)>>32))
		}
	}
	// 与 CPython 一致：去掉高位的 0 分组，但至少保留一个分组。
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r := &Random{}
	r.initByArray(key)
	return r
}

// bitsPerWord 是 big.Word 的位数，用于把大整数拆成 32 位分组。
const bitsPerWord = 32 << (^uint(0) >> 63)

// initGenrand 以单个 32 位种子初始化状态，是 init_by_array 的第一步。
func (r *Random) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < n; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = n
}

// initByArray 是 MT19937 参考实现的 init_by_array，CPython 用它处理整数种子。
func (r *Random) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := n
	if len(key) > k {
		k = len(key)
	}
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// Uint32 返回下一个 32 位输出（genrand_uint32），等价于 getrandbits(32)。
func (r *Random) Uint32() uint32 {
	if r.mti >= n {
		var kk int
		for kk = 0; kk < n-m; kk++ {
			y := (r.mt[kk] & upperMask) | (r.mt[kk+1] & lowerMask)
			r.mt[kk] = r.mt[kk+m] ^ (y >> 1) ^ mag01(y)
		}
		for ; kk < n-1; kk++ {
			y := (r.mt[kk] & upperMask) | (r.mt[kk+1] & lowerMask)
			r.mt[kk] = r.mt[kk+(m-n)] ^ (y >> 1) ^ mag01(y)
		}
		y := (r.mt[n-1] & upperMask) | (r.mt[0] & lowerMask)
		r.mt[n-1] = r.mt[m-1] ^ (y >> 1) ^ mag01(y)
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// mag01 是参考实现中 mag01[y&1] 查表的无分支写法。
func mag01(y uint32) uint32 {
	if y&1 != 0 {
		return matrixA
	}
	return 0
}

// GetRandBits 等价于 Python 的 getrandbits(k)，0 <= k <= 64。
// k > 32 时与 CPython 一样从低位到高位按 32 位分组填充，最高组丢弃低位。
func (r *Random) GetRandBits(k int) (uint64, error) {
	if k < 0 || k > 64 {
		return 0, fmt.Errorf("pyrandom: getrandbits: k=%d out of supported range [0,64]", k)
	}
	if k == 0 {
		return 0, nil
	}
	if k <= 32 {
		return uint64(r.Uint32() >> (32 - uint(k))), nil
	}
	var out uint64
	shift := uint(0)
	for rem := k; rem > 0; rem -= 32 {
		w := r.Uint32()
		if rem < 32 {
			w >>= 32 - uint(rem)
		}
		out |= uint64(w) << shift
		shift += 32
	}
	return out, nil
}

// Random 等价于 Python 的 random()：53 位精度的 [0,1) 浮点数。
func (r *Random) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// RandBelow 等价于 _randbelow_with_getrandbits(n)：取 n.bit_length() 位
// 反复抽取直到小于 n。n <= 0 时返回 0 且不消耗随机数（Python 会报错，
// 调用方已保证 n > 0）。
func (r *Random) RandBelow(n int) int {
	if n <= 0 {
		return 0
	}
	k := bitLength(uint64(n))
	for {
		v, _ := r.GetRandBits(k) // k <= 64，不会出错
		if v < uint64(n) {
			return int(v)
		}
	}
}

// bitLength 等价于 Python int.bit_length()。
func bitLength(x uint64) int {
	l := 0
	for x != 0 {
		l++
		x >>= 1
	}
	return l
}

// Shuffle 等价于 Python 3.11 的 shuffle(x)：i 从 len-1 递减到 1，
// 与 randbelow(i+1) 交换。通过 swap 回调适配任意切片。
func (r *Random) Shuffle(length int, swap func(i, j int)) {
	for i := length - 1; i >= 1; i-- {
		j := r.RandBelow(i + 1)
		swap(i, j)
	}
}

// SampleIndices 等价于 Python 3.11 的 sample(range(n), k)，返回被选中的下标。
// 与 CPython 相同，按 setsize 判定走“列表池”（小总体）还是“集合拒绝”
// （大总体）两种内部算法，两者消耗随机数的方式不同，结果也不同。
func (r *Random) SampleIndices(n, k int) ([]int, error) {
	if k < 0 || k > n {
		return nil, fmt.Errorf("%w: n=%d k=%d", ErrSampleSize, n, k)
	}
	result := make([]int, k)
	setsize := 21
	if k > 5 {
		setsize += pow4CeilLog(k * 3)
	}
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := r.RandBelow(n - i)
			result[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return result, nil
	}
	selected := make(map[int]struct{}, k)
	for i := 0; i < k; i++ {
		j := r.RandBelow(n)
		for {
			if _, dup := selected[j]; !dup {
				break
			}
			j = r.RandBelow(n)
		}
		selected[j] = struct{}{}
		result[i] = j
	}
	return result, nil
}

// pow4CeilLog 计算 4 ** ceil(log(x, 4))。Python 用浮点对数求值；x = 3k
// 永远不是 4 的幂，离整数边界的距离远大于浮点误差，所以整数算法结果相同。
func pow4CeilLog(x int) int {
	p := 1
	for p < x {
		p *= 4
	}
	return p
}

// Sample 是 SampleIndices 的泛型便捷形式，等价于 Python 的 sample(population, k)。
func Sample[T any](r *Random, population []T, k int) ([]T, error) {
	idx, err := r.SampleIndices(len(population), k)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = population[j]
	}
	return out, nil
}
