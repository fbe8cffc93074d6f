package emulator

import "github.com/vllm-cibench/cibench/internal/tokenize"

// kvBlock 是 KV cache 的一个物理块（BlockSize 个 token 的槽位）。
//
// hashed 的块登记在 KVCache.byHash 中，可被后来的请求按前缀命中；ref 是持有它的运行中
// 请求数。ref 为 0 的已登记块不释放内容而是进入 LRU 链，空间不够时才被驱逐——这正是
// vLLM 自动前缀缓存（APC）的做法：缓存不占“使用率”，但占容量。
type kvBlock struct {
	hash       uint64
	hashed     bool
	ref        int
	prev, next *kvBlock // 仅当 ref == 0 且 hashed 时在 LRU 链中
	inLRU      bool
}

// DefaultBlockSize 是 vLLM 在 CUDA 上的默认 --block-size。
const DefaultBlockSize = 16

// unboundedCachedBlocks 是容量不限（NumBlocks == 0）时保留的 ref 为 0 的缓存块上限：
// 没有容量压力就没有驱逐，缓存会随提示无限增长；这个上限（默认块大小下约 100 万 token）
// 只是为了让模拟器进程的内存有界，不模拟任何真实服务的行为。
const unboundedCachedBlocks = 1 << 16

// KVCache 模拟 vLLM v1 的 BlockPool + 前缀缓存：固定数量的块、按引用计数共享、
// 满块按链式哈希登记、ref 为 0 的登记块按 LRU 驱逐。
//
// 与 vLLM 一致的细节：
//   - 前缀命中只在完整块上发生，且最多命中 (tokens−1)/BlockSize 个块——整段提示都在
//     缓存里时，最后一个 token 仍要重算以得到 logits（kv_cache_manager.get_computed_blocks
//     里的 max_cache_hit_length = num_tokens − 1）。
//   - 链式哈希：第 i 块的哈希包含前 i−1 块的哈希，所以一旦某块未命中，后面的块都不会命中。
//   - 释放时按逆序把块放回 LRU 尾部：同一请求里靠前（更可能被共享）的块最后被驱逐。
//   - 没登记过的空闲块先于缓存块被复用。
//
// 并发约定：KVCache 没有锁，调用方（Perf）持锁使用。
type KVCache struct {
	blockSize int
	total     int // 0 表示不限容量
	caching   bool
	byHash    map[uint64]*kvBlock
	lruHead   *kvBlock // 最久未用（最先驱逐）
	lruTail   *kvBlock
	lruLen    int
	inUse     int // ref > 0 的块数
}

// NewKVCache 返回容量为 total 块（0 不限）、每块 blockSize 个 token 的 KV cache；
// caching 为 false 时不登记、不命中（vLLM 的 --no-enable-prefix-caching）。
func NewKVCache(blockSize, total int, caching bool) *KVCache {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &KVCache{blockSize: blockSize, total: total, caching: caching, byHash: map[uint64]*kvBlock{}}
}

// BlockSize 返回每块 token 数。
func (c *KVCache) BlockSize() int { return c.blockSize }

// blocksFor 返回容纳 tokens 个 token 需要的块数（向上取整）。
func (c *KVCache) blocksFor(tokens int) int { return (tokens + c.blockSize - 1) / c.blockSize }

// Usage 返回 vLLM 的 kv_cache_usage_perc：ref > 0 的块占总块数的比例（缓存着但没人用的
// 块算空闲，与 vLLM 的 BlockPool.get_usage 相同）。容量不限时返回 0。
func (c *KVCache) Usage() float64 {
	if c.total <= 0 {
		return 0
	}
	return float64(c.inUse) / float64(c.total)
}

// InUse 返回 ref > 0 的块数；Cached 返回登记在前缀缓存中的块数（含正在使用的）。
func (c *KVCache) InUse() int  { return c.inUse }
func (c *KVCache) Cached() int { return len(c.byHash) }

// Hit 返回 hashes（一段提示的链式块哈希）在缓存中连续命中的块，最多
// (tokens−1)/BlockSize 个。不修改任何状态。
func (c *KVCache) Hit(hashes []uint64, tokens int) []*kvBlock {
	if !c.caching || tokens <= 0 {
		return nil
	}
	limit := min(len(hashes), (tokens-1)/c.blockSize)
	var out []*kvBlock
	for i := 0; i < limit; i++ {
		b := c.byHash[hashes[i]]
		if b == nil {
			break
		}
		out = append(out, b)
	}
	return out
}

// Allocate 让 seq 持有足以容纳 tokens 个 token 的块：先接上 hits（前缀命中的块，
// 只在 seq 为空时给出），不足的部分分配新块。空闲块不够时什么都不改并返回 false
// （调用方据此排队或抢占）；ref 为 0 的命中块也要占用空闲额度，与 vLLM 的
// num_evictable_computed_blocks 记账一致。
func (c *KVCache) Allocate(seq *[]*kvBlock, hits []*kvBlock, tokens int) bool {
	need := c.blocksFor(tokens) - len(*seq) - len(hits)
	if need < 0 {
		need = 0
	}
	if c.total > 0 {
		revive := 0
		for _, b := range hits {
			if b.ref == 0 {
				revive++
			}
		}
		if need+revive > c.total-c.inUse {
			return false
		}
	}
	for _, b := range hits {
		if b.ref == 0 {
			c.lruRemove(b)
			c.inUse++
		}
		b.ref++
		*seq = append(*seq, b)
	}
	for i := 0; i < need; i++ {
		var b *kvBlock
		if c.total > 0 && c.total-c.inUse-c.lruLen <= 0 {
			b = c.lruHead // 没有从未登记的空闲块：驱逐最久未用的缓存块
			c.lruRemove(b)
			delete(c.byHash, b.hash)
			*b = kvBlock{}
		} else {
			b = &kvBlock{}
		}
		b.ref = 1
		c.inUse++
		*seq = append(*seq, b)
	}
	return true
}

// Commit 把 seq 中已填满的提示块按 hashes 登记进前缀缓存（hashes 只覆盖完整块）。
// 同一哈希已由别的块登记时保持本块不登记——vLLM 同样不替换已缓存的块。
func (c *KVCache) Commit(seq []*kvBlock, hashes []uint64) {
	if !c.caching {
		return
	}
	for i := 0; i < len(hashes) && i < len(seq); i++ {
		b := seq[i]
		if b.hashed {
			continue
		}
		if _, dup := c.byHash[hashes[i]]; dup {
			continue
		}
		b.hash, b.hashed = hashes[i], true
		c.byHash[hashes[i]] = b
	}
}

// Free 释放 seq 持有的块（逆序）：ref 归零的登记块进入 LRU 尾部，未登记的块直接空闲。
func (c *KVCache) Free(seq []*kvBlock) {
	for i := len(seq) - 1; i >= 0; i-- {
		b := seq[i]
		b.ref--
		if b.ref > 0 {
			continue
		}
		c.inUse--
		if b.hashed {
			c.lruPush(b)
		}
	}
	if c.total <= 0 {
		for c.lruLen > unboundedCachedBlocks {
			b := c.lruHead
			c.lruRemove(b)
			delete(c.byHash, b.hash)
		}
	}
}

// lruPush 把块放到 LRU 尾部（最近使用）。
func (c *KVCache) lruPush(b *kvBlock) {
	b.prev, b.next, b.inLRU = c.lruTail, nil, true
	if c.lruTail != nil {
		c.lruTail.next = b
	} else {
		c.lruHead = b
	}
	c.lruTail = b
	c.lruLen++
}

// lruRemove 把块从 LRU 链中摘下。
func (c *KVCache) lruRemove(b *kvBlock) {
	if !b.inLRU {
		return
	}
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		c.lruHead = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		c.lruTail = b.prev
	}
	b.prev, b.next, b.inLRU = nil, nil, false
	c.lruLen--
}

// TokenHasher 逐 token 累积提示的链式块哈希：每满 blockSize 个 token 产出一个块哈希，
// 它混入上一块的哈希（vLLM 的 hash_block_tokens(parent_hash, block_tokens)），所以
// 相同的块哈希意味着从头到这一块为止的全部 token 相同。不满一块的尾部不产出哈希。
type TokenHasher struct {
	blockSize int
	parent    uint64
	cur       uint64
	n         int
	Hashes    []uint64
}

// NewTokenHasher 返回块大小为 blockSize 的哈希器。
func NewTokenHasher(blockSize int) *TokenHasher {
	return &TokenHasher{blockSize: blockSize, parent: 0x6b76636163686530, cur: 0x9e3779b97f4a7c15}
}

// Token 加入一个 token（以其 64 位哈希表示）。
func (h *TokenHasher) Token(t uint64) {
	h.cur = Mix(h.cur, t)
	h.n++
	if h.n == h.blockSize {
		h.parent = Mix(h.parent, h.cur)
		h.Hashes = append(h.Hashes, h.parent)
		h.cur, h.n = 0x9e3779b97f4a7c15, 0
	}
}

// Text 按 internal/tokenize 的规则切分 s，逐个加入 token——与 usage 的计数规则相同，
// 所以块边界与 prompt_tokens 一一对应。
func (h *TokenHasher) Text(s string) {
	tokenize.Walk(s, func(piece string) bool {
		h.Token(StringHash(piece))
		return true
	})
}

// StringHash 返回 s 的 64 位 FNV-1a 哈希（token 的身份：比 tokenize.ID 的词表 id
// 区分度更高，前缀缓存不会因 id 碰撞而误命中）。
func StringHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
