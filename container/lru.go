package container

import "container/list"

// lru is a map of at most max entries that forgets the least recently
// used one to make room. Not safe for concurrent use (the Resolver's
// lock guards it).
type lru[K comparable, V any] struct {
	max   int
	order *list.List // front: most recent; of *lruEntry[K, V]
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K, V]).val = v
		c.order.MoveToFront(e)
		return
	}
	for c.order.Len() >= c.max && c.order.Len() > 0 {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*lruEntry[K, V]).key)
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{k, v})
}

func (c *lru[K, V]) len() int { return c.order.Len() }
