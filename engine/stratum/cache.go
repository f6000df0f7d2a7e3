package stratum

import "sync"

// CacheMode selects where a Call's results are cached.
type CacheMode int

const (
	// CacheNone caches nothing (the default).
	CacheNone CacheMode = iota
	// CacheSession caches within one Flow.Run.
	CacheSession
	// CacheGlobal caches across flows: in the Store, or in memory (with a
	// warning) without one. Its key includes the contract hash.
	CacheGlobal
)

// memCache is an in-memory cache of canonical JSON outputs by key.
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemCache() *memCache { return &memCache{m: map[string][]byte{}} }

func (c *memCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[key]
	return b, ok
}

func (c *memCache) put(key string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = b
}
