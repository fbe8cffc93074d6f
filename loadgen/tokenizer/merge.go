package tokenizer

// 本文件是 BPE 合并：与 HF tokenizers 的 Word::merge_all 相同的算法。
//
// 每个字节先映射成词表里的一个符号；所有能合并的相邻对按 (rank, 位置) 进入小顶堆；每次弹出
// rank 最小（同 rank 取最左）的一对，若它仍然有效（两边符号都还在、且仍是这一对）就合并，
// 再把新符号与左右邻居组成的新对放进堆。合并到堆空为止，剩下的符号数就是 token 数。
// 复杂度 O(n log n)：长片段（几万字节的无空白文本）也不会退化成平方。

// symbol 是合并过程中的一个符号：词表 id 与双向链表的前后指针；id < 0 表示已被并入左邻。
type symbol struct {
	id         int32
	prev, next int32
}

// cand 是堆里的一个候选合并：左符号的位置、优先级与结果 id。
type cand struct {
	pos, rank, newID int32
}

// less 报告 a 是否比 b 先合并：rank 小的先，同 rank 位置靠左的先。
func (a cand) less(b cand) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

// candHeap 是 cand 的小顶堆（手写，避免 container/heap 的接口装箱）。
type candHeap []cand

// push 放入一个候选。
func (h *candHeap) push(c cand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// pop 取出最先合并的候选。
func (h *candHeap) pop() cand {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].less(s[m]) {
			m = l
		}
		if r < len(s) && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// mergeCount 对片段 piece 的字节做 BPE 合并，返回合并后的符号数。
func (t *BPE) mergeCount(piece string) int {
	n := len(piece)
	if n <= 1 {
		return n
	}
	var symBuf [64]symbol
	var heapBuf [64]cand
	syms := symBuf[:0]
	if n > len(symBuf) {
		syms = make([]symbol, 0, n)
	}
	for i := 0; i < n; i++ {
		syms = append(syms, symbol{id: t.byteID[piece[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	h := candHeap(heapBuf[:0])
	for i := 0; i+1 < n; i++ {
		if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(cand{pos: int32(i), rank: m.rank, newID: m.newID})
		}
	}
	count := n
	for len(h) > 0 {
		c := h.pop()
		cur := &syms[c.pos]
		if cur.id < 0 || int(cur.next) >= n {
			continue
		}
		right := syms[cur.next]
		// 过期的候选：这一位置的符号或它的右邻已经变了。
		if m, ok := t.merges[pairKey(cur.id, right.id)]; !ok || m.newID != c.newID {
			continue
		}
		cur.id = c.newID
		syms[cur.next].id = -1
		cur.next = right.next
		if int(right.next) < n {
			syms[right.next].prev = c.pos
		}
		count--
		if cur.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h.push(cand{pos: cur.prev, rank: m.rank, newID: m.newID})
			}
		}
		if int(cur.next) < n {
			if m, ok := t.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h.push(cand{pos: c.pos, rank: m.rank, newID: m.newID})
			}
		}
	}
	return count
}
